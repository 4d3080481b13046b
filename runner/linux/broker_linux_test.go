package linux_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// listing returns every path under root with its type, for comparing the
// host before, during and after a run.
func listing(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p+" "+fi.Mode().Type().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitForFile polls for p, the sign a sandboxed script reached a point.
func waitForFile(t *testing.T, p string) {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(p); err == nil {
			return
		}
		if i > 2400 {
			t.Fatalf("%s never appeared", p)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestIntegrationBrokerNothingOnHost is the security property "a run
// creates nothing on the host for missing deny and protect paths": the
// workspace lists the same before, during and after a run that does
// nothing, and the missing protected names cannot be created.
func TestIntegrationBrokerNothingOnHost(t *testing.T) {
	sb := newSandbox(t)
	sb.Protect = append(sb.Protect, filepath.Join(sb.Root, ".vscode"), filepath.Join(sb.Root, ".bashrc"), filepath.Join(sb.Root, ".git/commondir"))
	sb.Deny = []string{filepath.Join(sb.Root, ".env")}
	sync := t.TempDir()
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
	before := listing(t, sb.Root)
	done := make(chan runOut, 1)
	go func() {
		done <- run(t, sb, "", sh("touch "+sync+"/started; while [ ! -e "+sync+"/go ]; do sleep 0.05; done")...)
	}()
	waitForFile(t, filepath.Join(sync, "started"))
	during := listing(t, sb.Root)
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.res.ExitCode != 0 {
		t.Fatalf("run: %+v %s", out.res, out.stderr)
	}
	after := listing(t, sb.Root)
	if !slices.Equal(before, during) || !slices.Equal(before, after) {
		t.Fatalf("the host changed:\nbefore %v\nduring %v\nafter  %v", before, during, after)
	}
	for _, script := range []string{
		"mkdir .vscode", "echo x > .bashrc", "echo TOKEN=x > .env", "mkdir -p .git && echo ../x > .git/commondir",
		"touch y && mv y .bashrc", "touch y && ln y .env", "ln -s /etc/passwd .bashrc", "mkdir -p .git && mkfifo .git/config",
	} {
		out := run(t, sb, "", sh(script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath == "" {
			t.Errorf("%s: want sandbox_denied with the path, got %+v %s", script, out.res, out.stderr)
		}
		for _, p := range []string{".vscode", ".bashrc", ".env", ".git/commondir", ".git/config"} {
			mustNotExist(t, filepath.Join(sb.Root, p))
		}
		_ = os.RemoveAll(filepath.Join(sb.Root, ".git"))
		_ = os.Remove(filepath.Join(sb.Root, "y"))
	}
}

// TestIntegrationBrokerHostRenameKeepsProtection is the security property
// "a host-side rename mid-run does not lift protection": git on the host
// rewrites .git/config by renaming config.lock over it, which detaches the
// read-only mount over the old file; the sandbox still cannot write the new
// one, and the refusal names it.
func TestIntegrationBrokerHostRenameKeepsProtection(t *testing.T) {
	sb := newSandbox(t)
	cfg := filepath.Join(sb.Root, ".git/config")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sync := t.TempDir()
	sb.Mounts = append(sb.Mounts, spec.Mount{Source: sync})
	done := make(chan runOut, 1)
	go func() {
		done <- run(t, sb, "", sh("touch "+sync+"/started; while [ ! -e "+sync+"/go ]; do sleep 0.05; done; "+
			"echo '[core] fsmonitor = evil' >> .git/config; echo x > .git/config.lock2 && mv .git/config.lock2 .git/config; "+
			"truncate -s 0 .git/config; chmod 777 .git/config; rm .git/config")...)
	}()
	waitForFile(t, filepath.Join(sync, "started"))
	lock := cfg + ".lock"
	if err := os.WriteFile(lock, []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(lock, cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sync, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != cfg {
		t.Fatalf("want sandbox_denied on %s, got %+v %s", cfg, out.res, out.stderr)
	}
	b, err := os.ReadFile(cfg)
	if err != nil || string(b) != "[core]\n\tbare = false\n" {
		t.Fatalf("the host's config changed: %q %v", b, err)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the host's config mode changed: %v %v", fi, err)
	}
}

// TestIntegrationBrokerGitWorks: real git in an existing repository, with
// .git/hooks and .git/config protected: status, add, commit, branch, log,
// stash and rebase all work, and nothing but git's own work appears.
func TestIntegrationBrokerGitWorks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = sb.Root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	git("init", "-q", "-b", "main")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root")
	hooks := listing(t, filepath.Join(sb.Root, ".git/hooks"))
	cfg, _ := os.ReadFile(filepath.Join(sb.Root, ".git/config"))
	script := `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
echo a > a.txt; git add a.txt; git commit -q -m a
git branch feature; git checkout -q feature; echo b > b.txt; git add b.txt; git commit -q -m b
git checkout -q main; echo c > c.txt; git add c.txt; git commit -q -m c
echo dirty >> a.txt; git stash -q; git stash pop -q; git checkout -q -- a.txt
git checkout -q feature; git rebase -q main; git log --oneline | wc -l; git status --short | wc -l`
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 || strings.TrimSpace(out.stdout) != "4\n0" {
		t.Fatalf("git in the sandbox: %+v stdout %q stderr %s", out.res, out.stdout, out.stderr)
	}
	if got := listing(t, filepath.Join(sb.Root, ".git/hooks")); !slices.Equal(got, hooks) {
		t.Fatalf("hooks changed: %v -> %v", hooks, got)
	}
	if b, _ := os.ReadFile(filepath.Join(sb.Root, ".git/config")); !bytes.Equal(b, cfg) {
		t.Fatalf("config changed: %q -> %q", cfg, b)
	}
	out = run(t, sb, "", sh("printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit; git config core.hooksPath /tmp")...)
	if out.res.FailureType != runner.FailureSandboxDenied {
		t.Fatalf("planting was not refused: %+v %s", out.res, out.stderr)
	}
	mustNotExist(t, filepath.Join(sb.Root, ".git/hooks/pre-commit"))
}

// TestIntegrationBrokerPatterns is the security property "protect and deny
// patterns hold for paths that do not exist yet": in a nested repository
// and a submodule's gitdir made inside the sandbox, hooks and config are
// refused (and the host's next git runs nothing); a deny pattern's match
// that exists at start is unreadable, and one the command tries to make is
// refused; a directory rename that would carry a guarded path is refused.
func TestIntegrationBrokerPatterns(t *testing.T) {
	sb := newSandbox(t)
	ws := sb.Root
	sb.Protect = append(sb.Protect, ws+"/**/.git/hooks", ws+"/**/.git/config", ws+"/**/.git/modules/**/config", ws+"/**/.git/modules/**/hooks")
	sb.Deny = []string{ws + "/**/.env", ws + "/**/*.pem"}
	if err := os.MkdirAll(ws+"/svc", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws+"/svc/.env", []byte("TOKEN=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A repository the host made, with a hook: renaming it away would
	// carry the hook out of the pattern's reach.
	if err := os.MkdirAll(ws+"/old/.git/hooks", 0o755); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, "", sh("cat svc/.env")...)
	if out.res.ExitCode == 0 || strings.Contains(out.stdout, "hunter2") {
		t.Fatalf("a deny pattern's match was read: %+v %q", out.res, out.stdout)
	}
	for _, script := range []string{
		"mkdir -p sub/.git/hooks && touch sub/.git/hooks/post-checkout",
		"mkdir -p sub/.git && printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' > sub/.git/config",
		"mkdir -p .git/modules/m && echo '[core]' > .git/modules/m/config",
		"mkdir -p .git/modules/a/b/hooks && ln -s /bin/sh .git/modules/a/b/hooks/pre-push",
		"mkdir -p web && echo x > web/../key.pem",
		"mkdir -p deep/er && echo T=1 > deep/er/.env",
		"mkdir -p t/hooks && echo x > t/hooks/pre-commit && mkdir -p n && mv t n/.git",
		"mv old old2",
	} {
		out := run(t, sb, "", sh(script)...)
		if out.res.FailureType != runner.FailureSandboxDenied {
			t.Errorf("%s: want sandbox_denied, got %+v %s", script, out.res, out.stderr)
		}
	}
	for _, p := range []string{"sub/.git/hooks/post-checkout", "sub/.git/config", ".git/modules/m/config", ".git/modules/a/b/hooks/pre-push", "key.pem", "deep/er/.env", "n/.git", "old2"} {
		mustNotExist(t, filepath.Join(ws, p))
	}
	// A plain directory rename still works.
	if out := run(t, sb, "", sh("mkdir -p src/x && mv src src2")...); out.res.ExitCode != 0 {
		t.Fatalf("a plain rename failed: %+v %s", out.res, out.stderr)
	}
}

// TestIntegrationBrokerGitNewRepos: with the default protect list, git init
// and git clone work inside the sandbox (the broker lets git's templates
// and a new repository's config through, the config only with keys that
// run nothing, written by the broker itself), a submodule checkout and a
// commit in the superproject work, and planting in any of these
// repositories is refused: a hook, core.fsmonitor, core.hooksPath, an
// alias, or an edit of the config the host made.
func TestIntegrationBrokerGitNewRepos(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	sb.Protect = nil
	for _, p := range spec.DefaultProtect {
		sb.Protect = append(sb.Protect, filepath.Join(sb.Root, p))
	}
	ws := sb.Root
	src := filepath.Join(ws, "lib")
	for _, args := range [][]string{{"init", "-q", "-b", "main", src}, {"-C", src, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "lib"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	libCfg, _ := os.ReadFile(filepath.Join(src, ".git/config"))
	script := `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q -b main app && cd app
echo a > a; git add a; git commit -q -m a
git -c protocol.file.allow=always submodule add -q ../lib lib
git commit -q -m sub
git -C lib log --oneline | wc -l
cd .. && git clone -q app copy && git -C copy log --oneline | wc -l
git -C copy branch feature && git -C copy stash list | wc -l
git -c protocol.file.allow=always clone -q --recurse-submodules app rcopy
git -C rcopy config submodule.active >/dev/null; git -C rcopy/lib status --short | wc -l
[ -z "$(git -C rcopy/lib config core.symlinks || true)" ]
echo done`
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 || !strings.HasSuffix(out.stdout, "done\n") {
		t.Fatalf("git in new repositories: %+v stdout %q stderr %s", out.res, out.stdout, out.stderr)
	}
	for _, plant := range []string{
		"printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > app/.git/hooks/pre-commit",
		"git -C app config core.fsmonitor 'touch /tmp/pwned'",
		"git -C app config core.hooksPath /tmp",
		"git -C copy config alias.st '!touch /tmp/pwned'",
		"git -C app/lib config core.fsmonitor 'touch /tmp/pwned'",
		"printf '#!/bin/sh\\n' > app/.git/modules/lib/hooks/post-checkout",
		"git -C lib config user.name x",
		"mv app/.git/hooks/pre-commit.sample app/.git/hooks/pre-commit",
	} {
		out := run(t, sb, "", sh(plant)...)
		if out.res.FailureType != runner.FailureSandboxDenied {
			t.Errorf("%s: want sandbox_denied, got %+v %s", plant, out.res, out.stderr)
		}
	}
	for _, hook := range []string{"app/.git/hooks/pre-commit", "app/.git/modules/lib/hooks/post-checkout"} {
		mustNotExist(t, filepath.Join(ws, hook))
	}
	for _, repo := range []string{"app", "copy", "app/lib"} {
		cmd := exec.Command("git", "config", "--list", "--show-origin")
		cmd.Dir = filepath.Join(ws, repo)
		b, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(b), "fsmonitor") || strings.Contains(string(b), "hookspath") || strings.Contains(string(b), "alias.") {
			t.Fatalf("%s's config: %v %s", repo, err, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(src, ".git/config")); !bytes.Equal(b, libCfg) {
		t.Fatalf("the host repository's config changed: %q", b)
	}
}

// TestIntegrationBrokerRemovesItsOwnRepos: a repository git made in the
// run can be removed again (rm -rf of a clone), while the host's own
// hooks directory cannot.
func TestIntegrationBrokerRemovesItsOwnRepos(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	sb.Protect = append(sb.Protect, sb.Root+"/**/.git/hooks", sb.Root+"/**/.git/config")
	if err := os.MkdirAll(filepath.Join(sb.Root, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := run(t, sb, "", sh("git init -q n && git clone -q n c 2>/dev/null && rm -rf n c && rmdir .git/hooks")...)
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(sb.Root, ".git/hooks") {
		t.Fatalf("want only the host's hooks refused: %+v %s", out.res, out.stderr)
	}
	mustNotExist(t, filepath.Join(sb.Root, "n"))
	mustNotExist(t, filepath.Join(sb.Root, "c"))
	if _, err := os.Stat(filepath.Join(sb.Root, ".git/hooks")); err != nil {
		t.Fatalf("the host's hooks directory: %v", err)
	}
}

// defaultProtect gives sb the built-in protect list, at its root.
func defaultProtect(sb *spec.Sandbox) {
	sb.Protect = nil
	for _, p := range spec.DefaultProtect {
		sb.Protect = append(sb.Protect, filepath.Join(sb.Root, p))
	}
}

// TestIntegrationBrokerGitRedirects is the security property "the sandbox
// cannot point git at a directory no rule guards": a .git file whose
// gitdir lies elsewhere (written, renamed or rewritten), a .git symlink,
// a symlinked .git/modules, and a core.worktree outside the repository's
// checkout in a config made in the sandbox are refused, each with its
// path; the planted hook and fsmonitor never run in the host's next git.
// A submodule's .git file (gitdir in .git/modules) still works.
func TestIntegrationBrokerGitRedirects(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	mark := filepath.Join(t.TempDir(), "pwned")
	// A gitdir the sandbox fills with a hook and a core.fsmonitor: any
	// redirect to it would make the host's next git run them.
	// The sandbox can no longer make one (TestIntegrationBrokerBareRepoPlant):
	// the host makes it here.
	for _, d := range []string{"evil/hooks", "evil/objects", "evil/refs", "sub"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"evil/HEAD":             "ref: refs/heads/main\n",
		"evil/config":           "[core]\n\tfsmonitor = touch " + mark + "\n",
		"evil/hooks/pre-commit": "#!/bin/sh\ntouch " + mark + "\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ script, blocked string }{
		{"printf 'gitdir: ../evil\\n' > sub/.git; git -C sub status", "sub/.git"},
		{"printf 'gitdir: ../evil' > sub/.git; cat sub/.git", "sub/.git"},
		{"printf 'gitdir: %s/evil\\n' \"$PWD\" > x && mv x sub/.git", "sub/.git"},
		{"ln -s ../evil sub/.git", "sub/.git"},
		{"mkdir -p app/.git && ln -s ../../evil app/.git/modules", "app/.git/modules"},
		{"mkdir -p t/d && ln -s ../../evil t/d/x && mkdir -p app/.git && mv t app/.git/modules", "t"},
		{"git init -q r && git -C r config core.worktree " + filepath.Dir(mark), "r/.git/config"},
		{"git init -q r2 && git -C r2 config core.worktree ../.git/hooks", "r2/.git/config"},
		{"ln evil/config sub/.git", "sub/.git"},
	} {
		out := run(t, sb, "", sh(tc.script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, tc.blocked) {
			t.Errorf("%s: want sandbox_denied on %s, got %+v %s", tc.script, tc.blocked, out.res, out.stderr)
		}
		for _, p := range []string{"sub/.git", "app/.git/modules"} {
			mustNotExist(t, filepath.Join(ws, p))
		}
		_ = os.Remove(filepath.Join(ws, "x"))
		_ = os.RemoveAll(filepath.Join(ws, "app"))
		_ = os.RemoveAll(filepath.Join(ws, "t"))
	}
	for _, repo := range []string{"sub", "r", "r2"} {
		cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
		cmd.Dir = filepath.Join(ws, repo)
		_ = cmd.Run()
		cmd = exec.Command("git", "status")
		cmd.Dir = filepath.Join(ws, repo)
		_ = cmd.Run()
	}
	mustNotExist(t, mark)
	// What git itself writes still works: a submodule's .git file points
	// into .git/modules, and its config's core.worktree into the checkout.
	for _, args := range [][]string{{"init", "-q", "-b", "main", ws + "/lib"}, {"-C", ws + "/lib", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "lib"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	script := `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q -b main app && cd app && git commit -q --allow-empty -m a
git -c protocol.file.allow=always submodule add -q ../lib lib
cat lib/.git; git -C lib status --short | wc -l; git commit -q -m sub; echo ok`
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 || out.stdout != "gitdir: ../.git/modules/lib\n0\nok\n" {
		t.Fatalf("a submodule in the sandbox: %+v %q %s", out.res, out.stdout, out.stderr)
	}
}

// TestIntegrationBrokerGitIncludes is the security property "what a
// protected git config includes is protected too": with the default
// protect list, a file .git/config pulls in (include.path, includeIf),
// existing or not, can be read but not written, created or replaced, and
// the host's next git runs nothing planted.
func TestIntegrationBrokerGitIncludes(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	if b, err := exec.Command("git", "init", "-q", "-b", "main", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, b)
	}
	f, err := os.OpenFile(filepath.Join(ws, ".git/config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("[include]\n\tpath = ../team.gitconfig\n[includeIf \"onbranch:main\"]\n\tpath = local.inc\n")
	f.Close()
	team := filepath.Join(ws, "team.gitconfig")
	if err := os.WriteFile(team, []byte("[user]\n\tname = team\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "pwned")
	plant := "printf '[core]\\n\\tfsmonitor = touch " + mark + "\\n'"
	if out := run(t, sb, "", sh("cat team.gitconfig")...); out.res.ExitCode != 0 || !strings.Contains(out.stdout, "team") {
		t.Fatalf("reading the include: %+v %q", out.res, out.stdout)
	}
	for _, tc := range []struct{ script, blocked string }{
		{plant + " >> team.gitconfig", "team.gitconfig"},
		{plant + " > t && mv t team.gitconfig", "team.gitconfig"},
		{"rm team.gitconfig", "team.gitconfig"},
		{plant + " > .git/local.inc", ".git/local.inc"},
	} {
		out := run(t, sb, "", sh(tc.script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, tc.blocked) {
			t.Errorf("%s: want sandbox_denied on %s, got %+v %s", tc.script, tc.blocked, out.res, out.stderr)
		}
		_ = os.Remove(filepath.Join(ws, "t"))
	}
	mustNotExist(t, filepath.Join(ws, ".git/local.inc"))
	if b, err := os.ReadFile(team); err != nil || string(b) != "[user]\n\tname = team\n" {
		t.Fatalf("the include changed: %q %v", b, err)
	}
	cmd := exec.Command("git", "status")
	cmd.Dir = ws
	_ = cmd.Run()
	mustNotExist(t, mark)
}
