package linux_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationHomeWorkspaceStartupFiles is finding 6 of issue 21 run for
// real, root and rootless: a workspace that is a home directory is refused
// without allow_home_workspace; with it, writing, creating, replacing or
// redirecting the home's start-up files (~/.gitconfig, which exists, and
// ~/.bash_aliases and ~/.config/git/config, which do not) is refused in the
// sandbox, and the host's files are unchanged, while the rest of the home
// stays writable.
func TestIntegrationHomeWorkspaceStartupFiles(t *testing.T) {
	sb := newSandbox(t)
	home := sb.Root
	gitconfig := []byte("[user]\n\tname = host\n")
	for _, d := range []string{".ssh", ".config"} {
		if err := os.Mkdir(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string][]byte{".bashrc": []byte("# host rc\n"), ".gitconfig": gitconfig} {
		if err := os.WriteFile(filepath.Join(home, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defaultProtect(sb)
	if err := spec.GuardHome(sb); err == nil || !errors.Is(err, spec.ErrInvalidConfig) {
		t.Fatalf("GuardHome of a home workspace: %v; want a refusal", err)
	}
	sb.AllowHomeWorkspace = true
	if err := spec.GuardHome(sb); err != nil {
		t.Fatal(err)
	}
	for _, plant := range []string{
		"echo '[core] pager = touch /tmp/pwned' >> .gitconfig",
		"printf '[alias]\\n' > .gitconfig",
		"echo 'touch /tmp/pwned' > .bash_aliases",
		"ln -s /tmp/pwned .bash_aliases",
		"mkdir -p .config/git && echo '[core]' > .config/git/config",
		"mv .gitconfig .gitconfig.old",
		"echo x > g && mv g .gitconfig",
		"mkdir -p .local/bin && echo x > .local/bin/git",
		"echo 'Host *' >> .ssh/config",
	} {
		out := run(t, sb, "", sh(plant)...)
		if out.res.FailureType != runner.FailureSandboxDenied {
			t.Errorf("%s: want sandbox_denied, got %+v %s", plant, out.res, out.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, ".gitconfig")); err != nil || !bytes.Equal(b, gitconfig) {
		t.Fatalf("~/.gitconfig on the host: %q, %v; want it unchanged", b, err)
	}
	for _, p := range []string{".bash_aliases", ".gitconfig.old", ".config/git/config", ".local/bin/git", ".ssh/config"} {
		mustNotExist(t, filepath.Join(home, p))
	}
	mustBeEmptyDir(t, filepath.Join(home, ".config/git"))
	out := run(t, sb, "", sh("mkdir -p proj && echo ok > proj/notes.txt && cat proj/notes.txt")...)
	if out.res.ExitCode != 0 || out.stdout != "ok\n" {
		t.Fatalf("a project file in the home: %+v %q %s", out.res, out.stdout, out.stderr)
	}
}
