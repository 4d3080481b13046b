package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountPointInReadOnlyDirRefusedAtLoad: the loader refuses a mount
// whose target is inside a read-only directory of the sandbox and missing
// there, naming the field and the fix (issue 9, item 9); one that exists
// there, or lies in a writable directory, is accepted.
func TestMountPointInReadOnlyDirRefusedAtLoad(t *testing.T) {
	if _, err := os.Stat("/etc"); err != nil {
		t.Skip("no /etc on this host")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yml, want string
	}{
		{"missing under /etc", "sandbox: {system: host, mounts: [{source: src, target: /etc/cordon-no-such-dir}]}", "sandbox.mounts[0].target"},
		{"a file under /etc for a directory", "sandbox: {system: host, mounts: [{source: src, target: /etc/hostname}]}", "is a file while the source"},
		{"missing under a read-only workspace", "sandbox: {readonly: true, mounts: [{source: src, target: " + dir + "/out}]}", "the workspace, which is read-only"},
		{"missing under a read-only mount", "sandbox: {mounts: [{source: src, target: /m, readonly: true}, {source: src, target: /m/sub}]}", "sandbox.mounts[1].target"},
		{"writable workspace", "sandbox: {mounts: [{source: src, target: " + dir + "/out}]}", ""},
		{"outside every directory", "sandbox: {system: host, mounts: [{source: src, target: /mnt/x}]}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yml), dir, "test.yaml")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var fe *FieldError
			if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "choose a target") {
				t.Fatalf("err = %v; want a field error with %q and the fix", err, tc.want)
			}
		})
	}
}
