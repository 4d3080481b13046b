package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationPatternsHoldAtInnerMountAlias: deny and protect are about
// host files, so a pattern holds at every sandbox path that reaches a file
// it matches, also through an extra mount whose source lies inside the
// root, below the pattern's literal prefix (docs/security.md, "Deny and
// protect are about host files"). With the root's sub mounted again at
// /alias2 (read-write) and /alias3 (read-only), sub/k2.pem (deny
// **/*.pem) is readable at neither /alias2/k2.pem nor /alias3/k2.pem, and
// sub/.git/hooks/pre-commit (protect **/.git/hooks) can neither be made
// executable nor written at /alias2/.git/hooks/pre-commit; the host files
// are unchanged. Default mode and strict_deny; runs as root and
// rootless (hack/test-rootless.sh).
//
// Found by review (2026-11-28): spec.appendZoneAliases matched a pattern
// against a zone's source as a path prefix, so a zone whose source lies
// inside the pattern's `**` got no alias, neither mask nor broker rule.
func TestIntegrationPatternsHoldAtInnerMountAlias(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "strict_deny"}[strict], func(t *testing.T) {
			sb := newSandbox(t)
			ws := sb.Root
			const secret = "SECRET-cordon-inner-alias"
			const hookText = "#!/bin/sh\necho hook\n"
			hook := filepath.Join(ws, "sub", ".git", "hooks", "pre-commit")
			key := filepath.Join(ws, "sub", "k2.pem")
			for _, f := range []struct{ path, data string }{
				{hook, hookText},
				{key, secret + "\n"},
			} {
				if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f.path, []byte(f.data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sb.StrictDeny = strict
			sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
			sb.Deny = []string{ws + "/**/*.pem"}
			sb.Mounts = []spec.Mount{
				{Source: filepath.Join(ws, "sub"), Target: "/alias2"},
				{Source: filepath.Join(ws, "sub"), Target: "/alias3", Readonly: true},
			}
			for _, script := range []string{
				"cat /alias2/k2.pem",
				"cat /alias3/k2.pem",
				"chmod 755 /alias2/.git/hooks/pre-commit",
				"echo 'touch /tmp/pwned' >> /alias2/.git/hooks/pre-commit",
			} {
				out := run(t, sb, "", sh(script)...)
				if out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused", script)
				}
				if strings.Contains(out.stdout, secret) {
					t.Errorf("%q printed the denied file: %q", script, out.stdout)
				}
			}
			if b, err := os.ReadFile(hook); err != nil || string(b) != hookText {
				t.Errorf("the hook on the host is now %q (%v)", b, err)
			}
			if fi, err := os.Stat(hook); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("the hook's mode on the host is now %v (%v), want 0644", fi.Mode(), err)
			}
		})
	}
}

// TestIntegrationPatternMatchSymlinkHeld: a protect pattern's match that is
// a symlink at start (a nested repository's .git/hooks the host linked to
// a folder of the tree, as some projects set up their hooks) is either
// refused at setup, as a literal protect path that is a symlink is
// (docs/security.md: "deny/protect path that is a symlink: refused"), or
// holds: no hook is written or made executable through it. The host's git
// in sub2 runs sub2/.git/hooks/pre-push, which is realhooks/pre-push. It
// holds (spec.withPatternLinks protects the link's target), with and
// without strict_deny.
//
// Found by review (2026-11-28): the broker decides a write through the
// link on the resolved path (realhooks/pre-push), which no rule matches.
func TestIntegrationPatternMatchSymlinkHeld(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			hook := filepath.Join(ws, "realhooks", "pre-push")
			if err := os.MkdirAll(filepath.Join(ws, "sub2", ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../realhooks", filepath.Join(ws, "sub2", ".git", "hooks")); err != nil {
				t.Fatal(err)
			}
			sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
			for _, script := range []string{
				"echo 'touch /tmp/pwned' >> sub2/.git/hooks/pre-push",
				"chmod 755 sub2/.git/hooks/pre-push",
				"echo 'touch /tmp/pwned' >> realhooks/pre-push",
				"chmod 755 realhooks/pre-push",
			} {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded through the protected link: %+v", script, out.res)
				}
			}
			if b, err := os.ReadFile(hook); err != nil || string(b) != "#!/bin/sh\n" {
				t.Errorf("the hook on the host is now %q (%v)", b, err)
			}
			if fi, err := os.Stat(hook); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("the hook's mode on the host is now %v (%v), want 0644", fi.Mode(), err)
			}
		})
	}
}
