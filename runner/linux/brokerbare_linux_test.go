package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestIntegrationBrokerBareRepoPlant: a directory holding HEAD, objects
// and refs is a repository to git, whatever its name, and git finds it
// from any directory below it that has no .git of its own. The sandbox
// cannot plant one whose config runs a command (core.pager, which git log
// runs on a terminal) or which holds a hook: whichever piece completes the
// shape is refused (in any order, also after removing and making HEAD
// again, and through a dangling symlink), a config cannot be made, renamed
// in, linked out or written in a complete one, and the host's git there
// runs nothing. A bare repository git makes (init --bare, clone --bare)
// keeps working, with the keys on the safe list.
func TestIntegrationBrokerBareRepoPlant(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	sb := newSandbox(t)
	defaultProtect(sb)
	ws := sb.Root
	mark := filepath.Join(t.TempDir(), "pwned")
	for _, args := range [][]string{{"init", "-q", "-b", "main", ws}, {"-C", ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	evilCfg := `printf '[core]\n\tpager = touch ` + mark + `; cat\n'`
	for _, tc := range []struct{ name, setup, script, blocked string }{
		{"HEAD last", "mkdir -p p1/pkg p1/objects p1/refs && " + evilCfg + " > p1/config", "echo 'ref: refs/heads/main' > p1/HEAD", "p1/HEAD"},
		{"objects last, a hook", "mkdir -p p2/refs p2/hooks && echo 'ref: refs/heads/main' > p2/HEAD && echo x > p2/hooks/post-checkout", "mkdir p2/objects", "p2/objects"},
		{"config into a complete one", "mkdir -p p3/refs p3/objects && echo 'ref: refs/heads/main' > p3/HEAD", evilCfg + " > p3/config", "p3/config"},
		{"config renamed in", "mkdir -p p4/refs p4/objects && echo 'ref: refs/heads/main' > p4/HEAD && " + evilCfg + " > c4", "mv c4 p4/config", "p4/config"},
		{"dangling symlink completes", "mkdir -p p5/refs && echo x > p5/HEAD && " + evilCfg + " > p5/config", "ln -s ../o5 p5/objects", "p5/objects"},
		{"commondir", "mkdir -p p6/refs p6/objects && echo .. > p6/commondir", "echo x > p6/HEAD", "p6/HEAD"},
		// HEAD and a commondir are a repository whose objects, refs,
		// config and hooks are where commondir points: here q, which has
		// no HEAD of its own, so no shape.
		{"commondir beside HEAD", "mkdir -p q/objects q/refs && " + evilCfg + " > q/config && mkdir -p p7/pkg && echo 'ref: refs/heads/main' > p7/HEAD", "echo ../q > p7/commondir", "p7/commondir"},
		{"hook in a bare repository", "git init -q --bare b1.git", "echo x > b1.git/hooks/pre-receive", "b1.git/hooks/pre-receive"},
		{"git config in a bare repository", "git init -q --bare b2.git", "git -C b2.git config core.pager 'touch " + mark + "'", "b2.git/config"},
		{"HEAD removed and made again", "git init -q --bare b3.git && rm b3.git/HEAD && " + evilCfg + " >> b3.git/config", "echo 'ref: refs/heads/main' > b3.git/HEAD", "b3.git/HEAD"},
		{"config linked out", "git init -q --bare b4.git", "ln b4.git/config l4", "b4.git/config"},
		// git takes a socket at refs (it only asks access(X_OK)), so a
		// bound unix socket completes the shape as a directory does.
		{"refs as a bound socket", "mkdir -p p8/objects && echo 'ref: refs/heads/main' > p8/HEAD && " + evilCfg + " > p8/config",
			`python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("p8/refs")'`, "p8/refs"},
	} {
		if out := run(t, sb, "", sh(tc.setup)...); out.res.ExitCode != 0 {
			t.Fatalf("%s: setting up: %+v %s", tc.name, out.res, out.stderr)
		}
		out := run(t, sb, "", sh(tc.script)...)
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != filepath.Join(ws, tc.blocked) {
			t.Errorf("%s: %s: want sandbox_denied on %s, got %+v %s", tc.name, tc.script, tc.blocked, out.res, out.stderr)
		}
	}
	// Nothing refused reached the host.
	for _, p := range []string{"p1/HEAD", "p2/objects", "p3/config", "p4/config", "p5/objects", "p6/HEAD",
		"p7/commondir", "b1.git/hooks/pre-receive", "b3.git/HEAD", "l4"} {
		mustNotExist(t, filepath.Join(ws, p))
	}
	if data, err := os.ReadFile(filepath.Join(ws, "b2.git/config")); err != nil || strings.Contains(string(data), "pager") {
		t.Fatalf("b2.git/config after the refused git config: %v %q", err, data)
	}
	// The host's git in (and below) each of them runs nothing.
	for _, dir := range []string{"p1/pkg", "p1", "p2", "p3", "p4", "p5", "p7/pkg", "b2.git", "b3.git"} {
		cmd := exec.Command("git", "log", "-1")
		cmd.Dir = filepath.Join(ws, dir)
		cmd.Env = append(os.Environ(), "GIT_PAGER=", "PAGER=")
		_ = cmd.Run()
		if p, err := exec.LookPath("script"); err == nil {
			_ = exec.Command(p, "-qc", "cd "+cmd.Dir+" && git log -1", "/dev/null").Run()
		}
	}
	mustNotExist(t, mark)
	// What git makes itself works: a bare init and clone, safe keys, a
	// push into it, and a plain clone.
	script := `set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git clone -q --bare . ok.git
git -C ok.git config user.name t
git init -q --bare ok2.git
git push -q ok2.git HEAD:refs/heads/main
git clone -q ok.git plain
git -C ok2.git log --oneline main | wc -l`
	out := run(t, sb, "", sh(script)...)
	if out.res.ExitCode != 0 || out.stdout != "1\n" {
		t.Fatalf("bare repositories git makes: %+v stdout %q stderr %s", out.res, out.stdout, out.stderr)
	}
}
