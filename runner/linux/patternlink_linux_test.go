package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// strictName names a subtest by its strict_deny setting.
func strictName(strict bool) string {
	if strict {
		return "strict_deny"
	}
	return "default"
}

// writeTree makes the files (path relative to root: content, mode 0644)
// and the symlinks (path: target) of a test.
func writeTree(t *testing.T, root string, files, links map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, target := range links {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

// mustBeFile fails unless host file p still holds data with mode 0644.
func mustBeFile(t *testing.T, p, data string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != data {
		t.Errorf("%s on the host is now %q (%v), want %q", p, b, err, data)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("%s's mode on the host is now %v (%v), want 0644", p, fi.Mode(), err)
	}
}

// mustBeLink fails unless p is still a symlink to target.
func mustBeLink(t *testing.T, p, target string) {
	t.Helper()
	if got, err := os.Readlink(p); err != nil || got != target {
		t.Errorf("%s is now a link to %q (%v), want %q", p, got, err, target)
	}
}

// mustStart fails unless script succeeds in sb: the run is held, not
// refused at setup.
func mustStart(t *testing.T, sb *spec.Sandbox, script string) {
	t.Helper()
	if out := run(t, sb, "", sh(script)...); out.res.ExitCode != 0 {
		t.Fatalf("%q: %+v; want it run (the link held, not refused at setup)", script, out.res)
	}
}

// TestIntegrationPatternMatchDanglingLinkHeld: a protect pattern's match
// that is a dangling symlink at start (sub2/.git/hooks linked to
// ../../realhooks, which does not exist) holds on the name it would
// reach: the command can make neither realhooks nor a hook through the
// link, and cannot replace the link; the link is unchanged and realhooks
// is absent or an empty directory after the run. Root and rootless
// (hack/test-rootless.sh), with and without strict_deny.
func TestIntegrationPatternMatchDanglingLinkHeld(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			writeTree(t, ws, map[string]string{"sub2/.git/HEAD": "ref: refs/heads/main\n"},
				map[string]string{"sub2/.git/hooks": "../../realhooks"})
			sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
			mustStart(t, sb, "readlink sub2/.git/hooks")
			for _, script := range []string{
				"mkdir -p realhooks && echo 'touch /tmp/pwned' > realhooks/pre-push",
				"mkdir -p sub2/.git/hooks/ && echo 'touch /tmp/pwned' > sub2/.git/hooks/pre-push",
				"rm sub2/.git/hooks && mkdir sub2/.git/hooks && echo 'touch /tmp/pwned' > sub2/.git/hooks/pre-push",
				"ln -sfn /tmp sub2/.git/hooks",
			} {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
			}
			mustBeLink(t, filepath.Join(ws, "sub2/.git/hooks"), "../../realhooks")
			mustBeEmptyDir(t, filepath.Join(ws, "realhooks"))
		})
	}
}

// TestIntegrationPatternLinkOnTheWayHeld: a symlink on the way to a
// protect pattern's match (a nested repository whose .git the host linked
// to ../realgit, under **/.git/hooks) holds the rest of the pattern below
// its target: realgit/hooks/pre-push can be neither written nor made
// executable, through the link or at its own place. Root and rootless.
func TestIntegrationPatternLinkOnTheWayHeld(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			const hook = "#!/bin/sh\n"
			writeTree(t, ws, map[string]string{"realgit/hooks/pre-push": hook, "realgit/HEAD": "ref: refs/heads/main\n"},
				map[string]string{"sub3/.git": "../realgit"})
			sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
			mustStart(t, sb, "readlink sub3/.git")
			for _, script := range []string{
				"echo 'touch /tmp/pwned' >> sub3/.git/hooks/pre-push",
				"chmod 755 sub3/.git/hooks/pre-push",
				"echo 'touch /tmp/pwned' >> realgit/hooks/pre-push",
				"echo 'touch /tmp/pwned' > sub3/.git/hooks/post-checkout",
			} {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
			}
			mustBeFile(t, filepath.Join(ws, "realgit/hooks/pre-push"), hook)
			if _, err := os.Lstat(filepath.Join(ws, "realgit/hooks/post-checkout")); err == nil {
				t.Errorf("a new hook was made through the link")
			}
		})
	}
}

// TestIntegrationDenyPatternMatchSymlinkHeld: a deny pattern's match that
// is a symlink at start (key.pem linked to ../real/secret, a file the
// pattern does not name) denies the file it reaches: the secret can be
// read neither through the link nor at its own place, nor changed, and
// the link cannot be replaced. Root and rootless, with and without
// strict_deny.
func TestIntegrationDenyPatternMatchSymlinkHeld(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			const secret = "SECRET-cordon-pattern-link"
			writeTree(t, ws, map[string]string{"real/secret": secret + "\n"},
				map[string]string{"keys/key.pem": "../real/secret"})
			sb.Deny = []string{ws + "/**/*.pem"}
			mustStart(t, sb, "readlink keys/key.pem")
			for _, script := range []string{
				"cat keys/key.pem",
				"cat real/secret",
				"echo x >> keys/key.pem",
				"ln -sfn ../real/other keys/key.pem",
			} {
				out := run(t, sb, "", sh(script)...)
				if out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
				if strings.Contains(out.stdout, secret) {
					t.Errorf("%q printed the denied file: %q", script, out.stdout)
				}
			}
			mustBeFile(t, filepath.Join(ws, "real/secret"), secret+"\n")
			mustBeLink(t, filepath.Join(ws, "keys/key.pem"), "../real/secret")
		})
	}
}

// TestIntegrationProtectedDirLinkHeld: a symlink inside a protected
// directory (a hook linked into the tree, .git/hooks/pre-commit ->
// ../../scripts/pre-commit, for the literal .git/hooks and a nested
// repository's under **/.git/hooks) holds its target: the read-only mount
// of the directory does not reach it, so the target is protected itself.
// Nothing is written or made executable through the links or at the
// targets. Root and rootless, with and without strict_deny, and with the
// literal entry alone.
func TestIntegrationProtectedDirLinkHeld(t *testing.T) {
	for _, tc := range []struct {
		name            string
		strict, pattern bool // pattern: **/.git/hooks too, not only the literal .git/hooks
	}{
		{"default", false, true},
		{"strict_deny", true, true},
		{"literal_only", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = tc.strict
			ws := sb.Root
			const hook = "#!/bin/sh\n"
			writeTree(t, ws, map[string]string{"scripts/pre-commit": hook, "scripts/pre-push": hook, ".git/HEAD": "ref: refs/heads/main\n"},
				map[string]string{".git/hooks/pre-commit": "../../scripts/pre-commit", "sub/.git/hooks/pre-push": "../../../scripts/pre-push"})
			scripts := []string{
				"echo 'touch /tmp/pwned' >> .git/hooks/pre-commit",
				"chmod 755 .git/hooks/pre-commit",
				"echo 'touch /tmp/pwned' >> scripts/pre-commit",
			}
			if tc.pattern {
				sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
				scripts = append(scripts, "echo 'touch /tmp/pwned' >> sub/.git/hooks/pre-push", "chmod 755 sub/.git/hooks/pre-push")
			}
			mustStart(t, sb, "cat .git/hooks/pre-commit sub/.git/hooks/pre-push")
			for _, script := range scripts {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
			}
			mustBeFile(t, filepath.Join(ws, "scripts/pre-commit"), hook)
			if tc.pattern {
				mustBeFile(t, filepath.Join(ws, "scripts/pre-push"), hook)
			}
		})
	}
}

// TestIntegrationPatternLinkOnTheWayDanglingHeld: a dangling symlink on
// the way to a protect pattern's match (sub/.git -> ../gonegit, missing)
// holds the rest of the pattern below the would-be target: the command
// cannot make gonegit/hooks/pre-push, nor a symlink at gonegit that would
// send it elsewhere; gonegit/hooks holds nothing after the run. Root and
// rootless, with and without strict_deny.
func TestIntegrationPatternLinkOnTheWayDanglingHeld(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			writeTree(t, ws, nil, map[string]string{"sub/.git": "../gonegit"})
			sb.Protect = append(sb.Protect, ws+"/**/.git/hooks")
			mustStart(t, sb, "mkdir -p gonegit/objects")
			for _, script := range []string{
				"mkdir -p gonegit/hooks && echo 'touch /tmp/pwned' > gonegit/hooks/pre-push",
				"echo 'touch /tmp/pwned' > sub/.git/hooks/pre-push",
				"mkdir -p elsewhere/hooks && rm -rf gonegit && ln -s elsewhere gonegit",
			} {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
			}
			mustBeEmptyDir(t, filepath.Join(ws, "gonegit/hooks"))
			if fi, err := os.Lstat(filepath.Join(ws, "gonegit")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Errorf("gonegit became a symlink")
			}
		})
	}
}
