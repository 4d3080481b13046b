package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestDenyHoldsUnderSymlinkedSource: a mount whose source goes through a
// symbolic link shows the denied file under the link's name; Check and the
// read tool (which runs with cordon's own credentials) still refuse it, as
// the kernel's mask does (review of issue 9, item 4), and protect holds for
// the write tool.
func TestDenyHoldsUnderSymlinkedSource(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{".ssh/id_ed25519", "proj/.git/config"} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("PRIVATE"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "home-link")
	if err := os.Symlink(home, link); err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{
		System:  spec.System{Kind: spec.SystemNone},
		Mounts:  []spec.Mount{{Source: link, Target: "/hosthome"}},
		Deny:    []string{filepath.Join(home, ".ssh")},
		Protect: []string{filepath.Join(home, "proj/.git/config")},
	}
	table, err := New(sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := table.Check("/hosthome/.ssh/id_ed25519", false); err == nil {
		t.Error("Check allows reading the denied key through the linked source")
	}
	if text, err := table.Read("/hosthome/.ssh/id_ed25519", 0); err == nil || !errors.Is(err, ErrDenied) {
		t.Errorf("Read = %q, %v; want ErrDenied", text, err)
	}
	if err := table.Write("/hosthome/proj/.git/config", "[core]\n\thooksPath = /tmp\n"); err == nil {
		t.Error("Write changed the protected .git/config through the linked source")
	}
	if b, _ := os.ReadFile(filepath.Join(home, "proj/.git/config")); string(b) != "PRIVATE" {
		t.Errorf(".git/config is now %q", b)
	}
}
