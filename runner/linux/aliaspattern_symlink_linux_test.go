package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationPatternHoldsAtSymlinkSourceMount: a deny pattern holds at
// a mount whose source is a symbolic link to a directory inside the
// pattern's reach (a link outside the root to its sub, mounted at /al, deny
// <root>/**/*.pem): neither /al/k2.pem nor /al/deep/k3.pem is readable, in
// the default mode and with strict_deny; root and rootless
// (hack/test-rootless.sh).
//
// Found by review (2026-11-28), failing in the default mode: the alias
// /al/**/*.pem is in the broker's rules (strict_deny refuses the open), but
// spec.sandboxPatternMatches walks the mount's source as written
// (<link>/**/*.pem) and filepath.WalkDir does not descend a root that
// is a symlink, so no match gets a mask and reads stay in the kernel.
func TestIntegrationPatternHoldsAtSymlinkSourceMount(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "strict_deny"}[strict], func(t *testing.T) {
			sb := newSandbox(t)
			ws := sb.Root
			const secret = "SECRET-cordon-symlink-source"
			for _, f := range []string{"sub/k2.pem", "sub/deep/k3.pem"} {
				p := filepath.Join(ws, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(secret+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(ws, "sub", "ok.txt"), []byte("ok\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// The link lies outside the root: the sandbox cannot replace it.
			lnk := filepath.Join(t.TempDir(), "lnk")
			if err := os.Symlink(filepath.Join(ws, "sub"), lnk); err != nil {
				t.Fatal(err)
			}
			sb.StrictDeny = strict
			sb.Deny = []string{ws + "/**/*.pem"}
			sb.Mounts = []spec.Mount{{Source: lnk, Target: "/al"}}
			if out := run(t, sb, "", sh("cat /al/ok.txt")...); out.res.ExitCode != 0 || out.stdout != "ok\n" {
				t.Fatalf("the mount's other files are not readable: %+v, stdout %q", out.res, out.stdout)
			}
			for _, script := range []string{"cat /al/k2.pem", "cat /al/deep/k3.pem"} {
				out := run(t, sb, "", sh(script)...)
				if out.res.ExitCode == 0 || strings.Contains(out.stdout, secret) {
					t.Errorf("%q: exit %d, stdout %q; want it refused and the secret unread", script, out.res.ExitCode, out.stdout)
				}
			}
		})
	}
}
