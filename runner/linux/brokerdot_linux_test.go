package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestIntegrationBrokerMkdirDot: mkdir of "x/." (tar extracting an
// archive made with "-C dir .", whose first entry is "./") fails with
// EEXIST as the kernel's does, so the extraction works: the broker
// answered EINVAL and tar stopped ("Cannot mkdir: Invalid argument").
func TestIntegrationBrokerMkdirDot(t *testing.T) {
	sb := newSandbox(t)
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "d/f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "cf", filepath.Join(sb.Root, "t.tar"), "-C", src, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	out := run(t, sb, "", sh("mkdir x && tar xf t.tar --no-same-owner -C x")...)
	if out.res.ExitCode != 0 {
		t.Fatalf("tar xf of an archive with ./ failed: exit %d, %s", out.res.ExitCode, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(sb.Root, "x/d/f")); err != nil {
		t.Fatalf("the archive was not extracted on the host: %v", err)
	}
}
