package cordon_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationToolsAgreeWithRunOnLinkTargets: the query API (Access),
// the file tools (Files.Write, Files.Read) and a command in the sandbox
// give one answer at what a rule reaches through a symlink: the target of
// a protect pattern's match that is a link (sub2/.git/hooks ->
// ../../realhooks), of a link inside a protected directory
// (.git/hooks/pre-commit -> ../../scripts/pre-commit), the would-be
// target of a dangling match (sub3/.git/hooks -> ../../ghosthooks), and
// of a deny pattern's link (keys/key.pem -> ../real/secret). Each is
// refused with its rule's typed error, the host files are unchanged and
// nothing is made; an ordinary file is allowed by all. Root and rootless
// (hack/test-rootless.sh).
func TestIntegrationToolsAgreeWithRunOnLinkTargets(t *testing.T) {
	testenv.RequireSandbox(t)
	const hook, secret = "#!/bin/sh\n", "SECRET-link-target\n"
	ws := t.TempDir()
	files := map[string]string{"realhooks/pre-push": hook, "scripts/pre-commit": hook, "real/secret": secret,
		".git/HEAD": "ref: refs/heads/main\n", "sub2/.git/HEAD": "x\n", "sub3/.git/HEAD": "x\n"}
	for rel, data := range files {
		mkFile(t, filepath.Join(ws, rel), data)
	}
	for rel, target := range map[string]string{"sub2/.git/hooks": "../../realhooks", ".git/hooks/pre-commit": "../../scripts/pre-commit",
		"sub3/.git/hooks": "../../ghosthooks", "keys/key.pem": "../real/secret"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, rel)); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := gitSandbox(t, ws, func(s *spec.Sandbox) {
		s.Protect = append(s.Protect, ws+"/.git/hooks", ws+"/**/.git/hooks")
		s.Deny = append(s.Deny, ws+"/**/*.pem")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel   string
		write bool
		want  error // nil: allowed by all
	}{
		{"realhooks/pre-push", true, mounts.ErrReadOnly},
		{"scripts/pre-commit", true, mounts.ErrReadOnly},
		{"ghosthooks/pre-push", true, mounts.ErrReadOnly},
		{"real/secret", true, mounts.ErrDenied},
		{"real/secret", false, mounts.ErrDenied},
		{"ok.txt", true, nil},
	} {
		p := filepath.Join(ws, tc.rel)
		a := sb.Access(p, tc.write)
		var tool error
		script := "cat " + tc.rel
		if tc.write {
			tool = sb.Files().Write(p, "touch /tmp/pwned\n")
			script = "mkdir -p " + filepath.Dir(tc.rel) + "; echo 'touch /tmp/pwned' >> " + tc.rel
		} else {
			var got string
			got, tool = sb.Files().Read(p, 0)
			if strings.Contains(got, "SECRET") {
				t.Errorf("Files.Read(%s) gave the denied file", tc.rel)
			}
		}
		out := runGit(t, sb, ws, script)
		if tc.want == nil {
			if a.Commands != nil || a.Tools != nil || tool != nil || out.res.ExitCode != 0 {
				t.Errorf("%s: Access %v/%v, tool %v, run exit %d %q; want all to allow it", tc.rel, a.Commands, a.Tools, tool, out.res.ExitCode, out.stderr)
			}
			continue
		}
		for what, err := range map[string]error{"Access.Commands": a.Commands, "Access.Tools": a.Tools, "Files": tool} {
			if !errors.Is(err, tc.want) {
				t.Errorf("%s (write %v): %s = %v; want %v, as the sandbox refuses it", tc.rel, tc.write, what, err, tc.want)
			}
		}
		if out.res.ExitCode == 0 || strings.Contains(out.stdout, "SECRET") {
			t.Errorf("%s (write %v): the command was allowed (%+v %q); want it refused as the tools refuse it", tc.rel, tc.write, out.res, out.stdout)
		}
	}
	for rel, data := range files {
		if b, err := os.ReadFile(filepath.Join(ws, rel)); err != nil || string(b) != data {
			t.Errorf("host %s is now %q (%v); want %q", rel, b, err, data)
		}
	}
	if fi, err := os.Lstat(filepath.Join(ws, "ghosthooks/pre-push")); err == nil {
		t.Errorf("a hook was made at the dangling link's target: %v", fi.Mode())
	}
}

func mkFile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
