package cordon_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// gitHome gives the test a host home of its own whose ~/.gitconfig holds
// an identity and keys that name code (none of which may reach the
// sandbox), and no system config; it returns the file a planted command
// would create.
func gitHome(t *testing.T) (mark string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	testenv.RequireSandbox(t)
	home := t.TempDir()
	mark = filepath.Join(t.TempDir(), "pwned")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Host Person\n\temail = host@example.com\n"+
		"[core]\n\thooksPath = "+home+"/hooks\n[alias]\n\tpwn = !touch "+mark+"\n[credential]\n\thelper = store\n"+
		"[protocol \"file\"]\n\tallow = always\n")
	return mark
}

// git runs git on the host in dir and fails the test on an error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v %s", args, dir, err, b)
	}
	return string(b)
}

// gitSandbox is the workspace profile at root, as `cordon run` there
// builds it, changed by edit.
func gitSandbox(t *testing.T, root string, edit func(*spec.Sandbox)) (*cordon.Sandbox, error) {
	t.Helper()
	cfg, err := spec.Profile("workspace", root)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cfg.Sandbox)
	}
	r, err := runnerlinux.New(runner.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return cordon.NewProject(cfg, cordon.WithRunner(r)).Sandbox()
}

type gitOut struct {
	res            cordon.Result
	stdout, stderr string
}

func runGit(t *testing.T, sb *cordon.Sandbox, dir, script string) gitOut {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := sb.Run(context.Background(), []string{"sh", "-c", script}, cordon.Dir(dir), cordon.Stdout(&out), cordon.Stderr(&errb))
	if err != nil {
		t.Fatalf("Run %q: %v", script, err)
	}
	return gitOut{res, out.String(), errb.String()}
}

func hashOf(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestIntegrationGitIdentity: in the default profile, git commit in a
// fresh repository takes the caller's user.name and user.email; nothing
// else of the caller's ~/.gitconfig (core.hooksPath, alias.*,
// credential.helper) reaches the sandbox's git; a repository's own
// user.email and the sandbox's own `git config --global` win; with
// git_identity: false git has no identity. Root, and rootless in
// hack/test-rootless.sh.
func TestIntegrationGitIdentity(t *testing.T) {
	gitHome(t)
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	sb, err := gitSandbox(t, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runGit(t, sb, repo, "git commit -q --allow-empty -m a && git log -1 --format='%an <%ae>/%cn <%ce>' && git config --list --show-scope | grep -v ^local")
	if out.res.ExitCode != 0 || !strings.HasPrefix(out.stdout, "Host Person <host@example.com>/Host Person <host@example.com>\n") {
		t.Fatalf("git commit: %+v %q %s", out.res, out.stdout, out.stderr)
	}
	// The host's system config is the sandbox's as before (included);
	// of the caller's own, only the identity.
	for _, leak := range []string{"hookspath", "alias.pwn", "helper=store", "protocol.file"} {
		if strings.Contains(strings.ToLower(out.stdout), leak) {
			t.Errorf("the sandbox's git sees %s of the host's config:\n%s", leak, out.stdout)
		}
	}
	if got := git(t, repo, "log", "-1", "--format=%ae"); got != "host@example.com\n" {
		t.Errorf("host sees author %q", got)
	}

	git(t, repo, "config", "user.email", "repo@example.com")
	out = runGit(t, sb, repo, "git commit -q --allow-empty -m b && git log -1 --format=%ae && git config --global user.email own@example.com && git commit -q --allow-empty -m c && git log -1 --format=%ae")
	if out.res.ExitCode != 0 || out.stdout != "repo@example.com\nrepo@example.com\n" {
		t.Errorf("a repository's user.email: %+v %q %s", out.res, out.stdout, out.stderr)
	}
	git(t, repo, "config", "--unset", "user.email")
	out = runGit(t, sb, repo, "git config --global user.email own@example.com && git commit -q --allow-empty -m d && git log -1 --format=%ae")
	if out.res.ExitCode != 0 || out.stdout != "own@example.com\n" {
		t.Errorf("the sandbox's own global config: %+v %q %s", out.res, out.stdout, out.stderr)
	}

	off, err := gitSandbox(t, repo, func(s *spec.Sandbox) { s.NoGitIdentity = true })
	if err != nil {
		t.Fatal(err)
	}
	before := git(t, repo, "rev-parse", "HEAD")
	out = runGit(t, off, repo, "git commit -q --allow-empty -m e")
	if out.res.ExitCode == 0 || !strings.Contains(out.stderr, "Please tell me who you are") {
		t.Errorf("git_identity: false: %+v %s", out.res, out.stderr)
	}
	if after := git(t, repo, "rev-parse", "HEAD"); after != before {
		t.Errorf("a commit was made without an identity")
	}
}

// TestIntegrationGitSubmodules: `git submodule update --init` in an
// existing repository and `git clone --recurse-submodules` work in the
// default profile; the existing config takes submodule.NAME.url and
// .active, and nothing else: submodule.NAME.update = !command,
// core.hooksPath, and a submodule's core.worktree outside its checkout
// are refused with their path, the configs unchanged, and the host's next
// `git submodule update` runs nothing. Root, and rootless.
func TestIntegrationGitSubmodules(t *testing.T) {
	mark := gitHome(t)
	base := t.TempDir()
	sub, super, clone := filepath.Join(base, "sub"), filepath.Join(base, "super"), filepath.Join(base, "clone")
	git(t, base, "init", "-q", "-b", "main", sub)
	git(t, sub, "commit", "-q", "--allow-empty", "-m", "s")
	git(t, base, "init", "-q", "-b", "main", super)
	git(t, super, "submodule", "add", "-q", sub, "lib")
	git(t, super, "commit", "-q", "-m", "super")
	git(t, base, "clone", "-q", super, clone)

	sb, err := gitSandbox(t, clone, func(s *spec.Sandbox) {
		s.Mounts = append(s.Mounts, spec.Mount{Source: sub, Target: sub, Readonly: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	out := runGit(t, sb, clone, "git -c protocol.file.allow=always submodule update -q --init && git submodule status | wc -l && git -C lib log --oneline | wc -l")
	if out.res.ExitCode != 0 || out.stdout != "1\n1\n" {
		t.Fatalf("git submodule update --init: %+v %q %s", out.res, out.stdout, out.stderr)
	}
	cfg := filepath.Join(clone, ".git", "config")
	if got := git(t, clone, "config", "submodule.lib.url"); got != sub+"\n" {
		t.Errorf("host's submodule.lib.url = %q", got)
	}
	// A later run: both configs are the host's now; deinit removes the
	// keys, update --init adds them back and rewrites the submodule's
	// core.worktree.
	out = runGit(t, sb, clone, "git submodule deinit -q -f lib && git -c protocol.file.allow=always submodule update -q --init && git submodule status | wc -l")
	if out.res.ExitCode != 0 || out.stdout != "1\n" {
		t.Fatalf("git submodule deinit and update --init: %+v %q %s", out.res, out.stdout, out.stderr)
	}
	modCfg := filepath.Join(clone, ".git", "modules", "lib", "config")
	for _, tc := range []struct{ script, blocked string }{
		{"git config submodule.lib.update '!touch " + mark + "'", cfg},
		{"git config core.hooksPath .githooks", cfg},
		{"git config core.worktree " + base, cfg},
		{"git -C lib config core.worktree " + base, modCfg},
		{"git -C lib config core.fsmonitor 'touch " + mark + "'", modCfg},
	} {
		before, modBefore := hashOf(t, cfg), hashOf(t, modCfg)
		out := runGit(t, sb, clone, tc.script)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.blocked {
			t.Errorf("%s: want sandbox_denied on %s, got %+v %s", tc.script, tc.blocked, out.res, out.stderr)
		}
		if hashOf(t, cfg) != before || hashOf(t, modCfg) != modBefore {
			t.Errorf("%s: a config changed", tc.script)
		}
	}
	git(t, clone, "submodule", "update", "-q")
	git(t, filepath.Join(clone, "lib"), "status", "-s")
	if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the host's git ran a planted command (%v)", err)
	}

	ws := t.TempDir()
	sb, err = gitSandbox(t, ws, func(s *spec.Sandbox) {
		s.Mounts = append(s.Mounts, spec.Mount{Source: base, Target: base, Readonly: true})
	})
	if err != nil {
		t.Fatal(err)
	}
	out = runGit(t, sb, ws, "git -c protocol.file.allow=always clone -q --recurse-submodules "+super+" c && cd c && git submodule status | wc -l && echo x > lib/x && git -C lib add x && git -C lib commit -qm x && git add lib && git commit -qm bump && git log --oneline | wc -l")
	if out.res.ExitCode != 0 || out.stdout != "1\n2\n" {
		t.Fatalf("git clone --recurse-submodules: %+v %q %s", out.res, out.stdout, out.stderr)
	}
}

// TestIntegrationGitWorktreeWorkspace: a workspace made by `git worktree
// add`, and a submodule's checkout, work in the default profile (status,
// add, commit): the main repository's .git is mounted with its hooks and
// configs protected, so a hook or a config written there is refused with
// its path and nothing changes; git_worktree: false leaves it out; a
// gitdir in no .git directory is refused at start, naming the fix. Root,
// and rootless.
func TestIntegrationGitWorktreeWorkspace(t *testing.T) {
	mark := gitHome(t)
	base := t.TempDir()
	sub, main, wt := filepath.Join(base, "sub"), filepath.Join(base, "main"), filepath.Join(base, "wt")
	git(t, base, "init", "-q", "-b", "main", sub)
	git(t, sub, "commit", "-q", "--allow-empty", "-m", "s")
	git(t, base, "init", "-q", "-b", "main", main)
	git(t, main, "submodule", "add", "-q", sub, "lib")
	git(t, main, "commit", "-q", "-m", "super")
	git(t, main, "worktree", "add", "-q", "-b", "wt", wt)
	mainGit := filepath.Join(main, ".git")
	hooks := func() string { return strings.Join(listDir(t, filepath.Join(mainGit, "hooks")), ",") }
	for _, tc := range []struct {
		name, root string
		plants     []struct{ script, blocked string }
	}{
		{"linked worktree", wt, []struct{ script, blocked string }{
			{"echo x > " + mainGit + "/hooks/pre-commit", mainGit + "/hooks/pre-commit"},
			{"git config core.fsmonitor 'touch " + mark + "'", mainGit + "/config"},
			{"echo .. > " + mainGit + "/worktrees/wt/commondir", mainGit + "/worktrees/wt/commondir"},
		}},
		{"submodule checkout", filepath.Join(main, "lib"), []struct{ script, blocked string }{
			{"echo x > " + mainGit + "/modules/lib/hooks/pre-commit", mainGit + "/modules/lib/hooks/pre-commit"},
			{"git config core.fsmonitor 'touch " + mark + "'", mainGit + "/modules/lib/config"},
			{"echo x > " + mainGit + "/hooks/post-checkout", mainGit + "/hooks/post-checkout"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := gitSandbox(t, tc.root, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := runGit(t, sb, tc.root, "git status --short && echo x > x.txt && git add x.txt && git commit -qm x && git log --oneline | wc -l && git status --short | wc -l")
			if out.res.ExitCode != 0 || out.stdout != "2\n0\n" {
				t.Fatalf("git in a %s: %+v %q %s", tc.name, out.res, out.stdout, out.stderr)
			}
			if got := git(t, tc.root, "log", "-1", "--format=%s %ae"); got != "x host@example.com\n" {
				t.Errorf("host sees %q", got)
			}
			for _, p := range tc.plants {
				hb, cb, mb := hooks(), hashOf(t, filepath.Join(mainGit, "config")), hashOf(t, filepath.Join(mainGit, "modules", "lib", "config"))
				out := runGit(t, sb, tc.root, p.script)
				if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != p.blocked {
					t.Errorf("%s: want sandbox_denied on %s, got %+v %s", p.script, p.blocked, out.res, out.stderr)
				}
				if hooks() != hb || hashOf(t, filepath.Join(mainGit, "config")) != cb || hashOf(t, filepath.Join(mainGit, "modules", "lib", "config")) != mb {
					t.Errorf("%s: the main repository's hooks or configs changed", p.script)
				}
			}
			if _, err := os.Stat(filepath.Join(mainGit, "worktrees", "wt", "commondir")); err != nil {
				t.Error(err)
			}
			git(t, tc.root, "status", "-s")
			if _, err := os.Stat(mark); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the host's git ran a planted command (%v)", err)
			}

			// The command line's --mount of the same .git (what the docs
			// said before) replaces cordon's, here read-only.
			ro, err := sb.Override(spec.Overrides{Mounts: []string{mainGit + ":ro"}, Dir: tc.root})
			if err != nil {
				t.Fatalf("--mount %s:ro: %v", mainGit, err)
			}
			if out := runGit(t, ro, tc.root, "git log --oneline | wc -l && touch "+mainGit+"/x"); out.stdout != "2\n" || out.res.BlockedPath != mainGit+"/x" {
				t.Errorf("--mount %s:ro: %+v %q %s", mainGit, out.res, out.stdout, out.stderr)
			}

			off, err := gitSandbox(t, tc.root, func(s *spec.Sandbox) { s.NoGitWorktree = true })
			if err != nil {
				t.Fatal(err)
			}
			if out := runGit(t, off, tc.root, "git status"); out.res.ExitCode == 0 {
				t.Errorf("git_worktree: false: git status worked: %+v", out.res)
			}
		})
	}

	sep := filepath.Join(t.TempDir(), "repo.git")
	ws := filepath.Join(base, "separate")
	git(t, base, "init", "-q", "--separate-git-dir", sep, ws)
	_, err := gitSandbox(t, ws, nil)
	var fe *spec.FieldError
	if !errors.As(err, &fe) || !strings.Contains(fe.Fix, "git_worktree: false") {
		t.Errorf("a gitdir in no .git directory: %v", err)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestGitIdentityReadOnce: a front end's flags (Override) rebuild the
// sandbox with the identity the first build read in the same workspace:
// `cordon run` starts the caller's git once, not once per build, and the
// rebuilt sandbox still carries the identity.
func TestGitIdentityReadOnce(t *testing.T) {
	gitHome(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "starts")
	writeFile(t, filepath.Join(bin, "git"), "#!/bin/sh\necho start >>"+log+"\nexec "+real+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	repo := t.TempDir()
	sb, err := gitSandbox(t, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := sb.Override(spec.Overrides{Readonly: true, Dir: repo})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "start"); n != 1 {
		t.Errorf("git started %d times for a build and its Override, want 1", n)
	}
	for name, s := range map[string]*cordon.Sandbox{"built": sb, "overridden": ro} {
		id := s.Spec().Env.Set["GIT_CONFIG_SYSTEM"]
		if b, err := os.ReadFile(id); err != nil || !strings.Contains(string(b), "host@example.com") {
			t.Errorf("%s sandbox: identity config %q: %v %q", name, id, err, b)
		}
	}
}
