package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// hostGitQuiet runs git on the host and returns its output, whatever its
// exit status: the check is on what it left behind.
func hostGitQuiet(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	b, _ := cmd.CombinedOutput()
	return string(b)
}

func requireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// wantDenied fails unless out is a sandbox_denied result on blocked.
func wantDenied(t *testing.T, what string, out runOut, blocked string) {
	t.Helper()
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != blocked {
		t.Errorf("%s: want sandbox_denied on %s, got %+v %s", what, blocked, out.res, out.stderr)
	}
}

// TestIntegrationGitdirThroughSymlinkRefused is finding 2 of issue 21: a
// .git file whose gitdir reaches an unguarded directory through ".." after
// a symlink the sandbox made ("../.git/y/.." with .git/y -> evil/inner is
// evil, not .git) is never published, and the host's next git in that
// directory runs nothing planted in evil.
func TestIntegrationGitdirThroughSymlinkRefused(t *testing.T) {
	requireGit(t)
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	mark := filepath.Join(t.TempDir(), "pwned")
	hostGit(t, ws, "init", "-q", "-b", "main", ".")
	hostGit(t, ws, "commit", "-q", "--allow-empty", "-m", "root")
	// evil holds a repository whose config runs a command (as the write
	// tool could plant, finding 1): only the redirect is decided here.
	evil := filepath.Join(ws, "evil")
	hostGit(t, ws, "init", "-q", "--bare", evil)
	hostGit(t, evil, "config", "core.fsmonitor", "touch "+mark)
	hostGit(t, evil, "config", "core.bare", "false")
	hostGit(t, evil, "config", "core.worktree", filepath.Join(ws, "sub"))
	for _, tc := range []struct{ name, script string }{
		{"relative", "mkdir -p evil/inner sub && ln -sfn " + evil + "/inner .git/y && printf 'gitdir: ../.git/y/..\\n' > sub/.git; grep -q y sub/.git"},
		{"absolute", "mkdir -p evil/inner sub && ln -sfn " + evil + "/inner .git/y && printf 'gitdir: " + ws + "/.git/y/..\\n' > sub/.git; grep -q y sub/.git"},
		{"renamed", "mkdir -p evil/inner sub && ln -sfn " + evil + "/inner .git/y && printf 'gitdir: ../.git/y/..\\n' > sub/g && mv sub/g sub/.git; grep -q y sub/.git"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantDenied(t, tc.script, run(t, sb, "", sh(tc.script)...), filepath.Join(ws, "sub/.git"))
			mustNotExist(t, filepath.Join(ws, "sub/.git"))
			hostGitQuiet(t, filepath.Join(ws, "sub"), "status")
			hostGitQuiet(t, ws, "status")
			mustNotExist(t, mark)
		})
	}
}

// TestIntegrationWorktreeThroughSymlinkRefused is finding 3 of issue 21:
// in a repository the sandbox made (whose config the broker lets git
// rewrite), a core.worktree that leaves the checkout through a symlink the
// sandbox made ("../lnk/.." with lnk -> OUT/deep is OUT, lexically the
// checkout itself; "../lnk3" with lnk3 -> another directory) is refused,
// and the host's git reset --hard there writes nothing outside the
// checkout. A submodule's core.worktree rewritten so is refused too.
func TestIntegrationWorktreeThroughSymlinkRefused(t *testing.T) {
	requireGit(t)
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(filepath.Join(out, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(out, "victim")
	if err := os.WriteFile(victim, []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	// Each case in a repository of its own: a config made in an earlier
	// run is the host's to change.
	setup := func(n int) string {
		return `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git init -q -b main nested` + strconv.Itoa(n) + ` && cd nested` + strconv.Itoa(n) + `
echo pwned > victim && git add victim && git commit -q -m v
mkdir -p ../a/b && ln -s ` + out + `/deep lnk && ln -s ` + ws + `/a/b lnk3
`
	}
	for n, val := range []string{"../lnk/..", "../lnk", "../lnk3", "../lnk3/..", "../../nested4/lnk/.."} {
		nested := filepath.Join(ws, "nested"+strconv.Itoa(n))
		script := setup(n) + "git config core.worktree " + val
		wantDenied(t, script, run(t, sb, "", sh(script)...), filepath.Join(nested, ".git/config"))
		if got := hostGitQuiet(t, nested, "config", "--file", filepath.Join(nested, ".git/config"), "core.worktree"); got != "" {
			t.Fatalf("core.worktree %s was written: %s", val, got)
		}
		hostGitQuiet(t, nested, "reset", "-q", "--hard")
		if b, err := os.ReadFile(victim); err != nil || string(b) != "orig\n" {
			t.Fatalf("core.worktree %s: a file outside the workspace changed: %q %v", val, b, err)
		}
		for _, p := range []string{filepath.Join(out, "deep/victim"), filepath.Join(ws, "a/victim"), filepath.Join(ws, "a/b/victim")} {
			mustNotExist(t, p)
		}
	}
	// The everyday case still works: a core.worktree inside the checkout.
	ok := setup(9) + "git config core.worktree .. && git config core.worktree"
	if o := run(t, sb, "", sh(ok)...); o.res.ExitCode != 0 {
		t.Fatalf("core.worktree .. in a new repository: %+v %s", o.res, o.stderr)
	}
}

// TestIntegrationHooksPathProtected is finding 5 of issue 21: a protected
// config's core.hooksPath (husky's .husky/_), a program its keys name
// (core.fsmonitor), and the host's global config's relative core.hooksPath
// are protected like .git/hooks: the sandbox's plants are refused and the
// host's next git status and git commit run nothing.
func TestIntegrationHooksPathProtected(t *testing.T) {
	requireGit(t)
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	mark := filepath.Join(t.TempDir(), "pwned")
	global := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(global, []byte("[core]\n\thooksPath = .githooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hostGit(t, ws, "init", "-q", "-b", "main", ".")
	if err := os.MkdirAll(filepath.Join(ws, ".husky/_"), 0o755); err != nil {
		t.Fatal(err)
	}
	hostGit(t, ws, "config", "core.hooksPath", ".husky/_")
	hostGit(t, ws, "config", "core.fsmonitor", "./tools/fsm.sh")
	hostGit(t, ws, "config", "alias.b", "!scripts/build.sh --fast")
	hostGit(t, ws, "commit", "-q", "--allow-empty", "-m", "root")
	hook := "printf '#!/bin/sh\\ntouch " + mark + "\\n' > %s && chmod +x %s"
	for _, p := range []struct{ script, blocked string }{
		{strings.ReplaceAll(hook, "%s", ".husky/_/pre-commit"), filepath.Join(ws, ".husky/_/pre-commit")},
		{"mkdir -p tools && " + strings.ReplaceAll(hook, "%s", "tools/fsm.sh"), filepath.Join(ws, "tools")},
		{"mkdir -p scripts && " + strings.ReplaceAll(hook, "%s", "scripts/build.sh"), filepath.Join(ws, "scripts")},
		{"mv .husky h2", filepath.Join(ws, ".husky")},
	} {
		wantDenied(t, p.script, run(t, sb, "", sh(p.script)...), p.blocked)
	}
	// The global config is read when the sandbox is built.
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	plant := "mkdir -p .githooks && " + strings.ReplaceAll(hook, "%s", ".githooks/pre-commit")
	wantDenied(t, plant, run(t, sb, "", sh(plant)...), filepath.Join(ws, ".githooks"))
	for _, p := range []string{".husky/_/pre-commit", "tools", "scripts", ".githooks"} {
		mustNotExist(t, filepath.Join(ws, p))
	}
	if _, err := os.Stat(filepath.Join(ws, ".husky/_")); err != nil {
		t.Fatalf("the hooks directory moved: %v", err)
	}
	hostGitQuiet(t, ws, "status")
	hostGitQuiet(t, ws, "commit", "-q", "--allow-empty", "-m", "next")
	hostGitQuiet(t, ws, "b")
	if err := os.Unsetenv("GIT_CONFIG_GLOBAL"); err != nil {
		t.Fatal(err)
	}
	hostGitQuiet(t, ws, "commit", "-q", "--allow-empty", "-m", "again")
	mustNotExist(t, mark)

	// A program reached through a link in the workspace: the link is
	// protected too, so that it cannot be turned elsewhere, and a mount
	// cannot cover a link, so the run is refused, naming it.
	if err := os.MkdirAll(filepath.Join(ws, "tools2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tools2", filepath.Join(ws, "lnkdir")); err != nil {
		t.Fatal(err)
	}
	hostGit(t, ws, "config", "alias.c", "!lnkdir/run.sh")
	o := run(t, sb, "", sh("ln -sfn evil lnkdir; "+strings.ReplaceAll(hook, "%s", "tools2/run.sh"))...)
	if o.res.FailureType != runner.FailureSetupError || !strings.Contains(o.res.FailureDetail, filepath.Join(ws, "lnkdir")) {
		t.Fatalf("a program through a link: want a setup error naming the link, got %+v", o.res)
	}
	hostGitQuiet(t, ws, "c")
	if l, err := os.Readlink(filepath.Join(ws, "lnkdir")); err != nil || l != "tools2" {
		t.Fatalf("lnkdir was turned: %q %v", l, err)
	}
	mustNotExist(t, filepath.Join(ws, "tools2/run.sh"))
	mustNotExist(t, mark)
}

// TestIntegrationCasefoldFlagRefused: FS_IOC_SETFLAGS, which could set
// the case-folding flag on a directory and defeat every name rule, is
// refused by the filter with EPERM, whatever the command's upper half;
// outside the sandbox the same call on the same kind of directory is not
// refused so (the kernel answers it, or the file system says it has no
// flags: never EPERM for the owner).
func TestIntegrationCasefoldFlagRefused(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no " + py)
	}
	prog := `import fcntl, os, struct, sys
os.makedirs(sys.argv[1], exist_ok=True)
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
for cmd in (0x40086602, 0x40046602, 0x140086602):
    for flags in (0x40000000, 0):
        try:
            fcntl.ioctl(fd, cmd, struct.pack("l", flags))
            print("ok")
        except OSError as e:
            print(e.errno)
`
	sb := newSandbox(t)
	out := run(t, sb, "", py, "-c", prog, filepath.Join(sb.Root, "d"))
	if out.res.ExitCode != 0 || strings.Fields(out.stdout) == nil {
		t.Fatalf("the probe did not run: %+v %s", out.res, out.stderr)
	}
	for _, got := range strings.Fields(out.stdout) {
		if got != "1" {
			t.Fatalf("FS_IOC_SETFLAGS in the sandbox: %q, want EPERM (1) for every form", out.stdout)
		}
	}
	b, err := exec.Command(py, "-c", prog, filepath.Join(t.TempDir(), "d")).CombinedOutput()
	if err != nil {
		t.Fatalf("on the host: %v %s", err, b)
	}
	if f := strings.Fields(string(b)); len(f) != 6 || f[1] == "1" {
		t.Fatalf("on the host, clearing the flags of one's own directory: %q (EPERM there would make the sandbox's answer meaningless)", b)
	}
	// chattr, where it is installed, fails too.
	if _, err := os.Stat("/usr/bin/chattr"); err == nil {
		out := run(t, sb, "", sh("mkdir -p e && chattr +F e; echo $?")...)
		if strings.TrimSpace(out.stdout) == "0" {
			t.Fatalf("chattr +F succeeded in the sandbox: %s", out.stderr)
		}
	}
}
