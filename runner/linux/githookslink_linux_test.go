package linux_test

import (
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/mounts"
)

// TestIntegrationGitHooksPathLinkHeld: a link inside the core.hooksPath
// directory a protected .git/config names (.githooks/pre-commit ->
// ../tools/pre-commit, a writable file of the tree) holds its target as
// a link inside a configured protect entry does: the hook git runs can be
// rewritten neither through the link nor at tools/pre-commit, the link
// cannot be replaced, and the mount table (the file tools, cordon check)
// refuses the same write. Root and rootless (hack/test-rootless.sh), with
// and without strict_deny.
func TestIntegrationGitHooksPathLinkHeld(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, strict := range []bool{false, true} {
		t.Run(strictName(strict), func(t *testing.T) {
			sb := newSandbox(t)
			sb.StrictDeny = strict
			ws := sb.Root
			const hook = "#!/bin/sh\n"
			writeTree(t, ws, map[string]string{".git/config": "[core]\n\thooksPath = .githooks\n", ".git/HEAD": "ref: refs/heads/main\n",
				"tools/pre-commit": hook}, map[string]string{".githooks/pre-commit": "../tools/pre-commit"})
			mustStart(t, sb, "readlink .githooks/pre-commit")
			for _, script := range []string{
				"echo 'touch /tmp/pwned' >> tools/pre-commit",
				"echo 'touch /tmp/pwned' >> .githooks/pre-commit",
				"chmod 755 tools/pre-commit",
				"ln -sfn /tmp/x .githooks/pre-commit",
			} {
				if out := run(t, sb, "", sh(script)...); out.res.ExitCode == 0 {
					t.Errorf("%q succeeded; want it refused: %+v", script, out.res)
				}
			}
			mustBeFile(t, filepath.Join(ws, "tools/pre-commit"), hook)
			mustBeLink(t, filepath.Join(ws, ".githooks/pre-commit"), "../tools/pre-commit")
			tab, err := mounts.New(sb)
			if err != nil {
				t.Fatal(err)
			}
			if err := tab.Write("tools/pre-commit", "touch /tmp/pwned\n"); err == nil {
				t.Errorf("the file tools wrote the hook's target; want it refused as the sandbox refuses it")
			}
			mustBeFile(t, filepath.Join(ws, "tools/pre-commit"), hook)
		})
	}
}
