//go:build unix

package mounts

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// hostGitLog runs the host's git log in dir as a person would, on a
// terminal (script), where git runs a configured pager.
func hostGitLog(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	_ = exec.Command("git", "-C", dir, "log", "-1").Run()
	_ = exec.Command("git", "-C", dir, "-p", "log", "-1").Run()
	if p, err := exec.LookPath("script"); err == nil {
		_ = exec.Command(p, "-qc", "cd '"+dir+"' && git log -1", "/dev/null").Run()
	}
}

// TestWritePlantsNoRepository is issue 21's finding 1: the file tools'
// Write (the MCP write tool, the Go API's Files) made r/HEAD,
// r/objects/info/alternates, r/refs/heads/master and an r/config with a
// core.pager, and the host's next git log in r ran the pager. Write now
// asks package decide's shape rules as the broker does: the config is
// refused, not written, and the host's git runs nothing; a safe config is
// taken; a name that completes the shape around a planted config, a hook
// and a hooks file in a shaped directory are refused without a trace.
func TestWritePlantsNoRepository(t *testing.T) {
	ws := t.TempDir()
	mark := filepath.Join(t.TempDir(), "pwned")
	tab, err := New(&spec.Sandbox{Root: ws})
	if err != nil {
		t.Fatal(err)
	}
	evil := "[core]\n\tpager = touch " + mark + "; cat\n"
	// A real commit for the planted repository to show (through its
	// alternates), so that the host's git log gets as far as its pager.
	objects, commit := hostCommit(t)
	for _, w := range [][2]string{{"r/HEAD", "ref: refs/heads/master\n"}, {"r/objects/info/alternates", objects + "\n"}, {"r/refs/heads/master", commit + "\n"}} {
		if err := tab.Write(w[0], w[1]); err != nil {
			t.Fatalf("Write(%s): %v", w[0], err)
		}
	}
	rows := []struct {
		name, path, content string
		absent              string // what must not exist after the refusal
	}{
		{"config with core.pager into a complete shape", "r/config", evil, "r/config"},
		{"a hook in a complete shape", "r/hooks/post-checkout", "#!/bin/sh\ntouch " + mark + "\n", "r/hooks"},
		{"commondir in a complete shape", "r/commondir", "../x\n", "r/commondir"},
		{"config.worktree in a complete shape", "r/config.worktree", "[core]\n", "r/config.worktree"},
	}
	for _, row := range rows {
		err := tab.Write(row.path, row.content)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Err != ErrReadOnly || pe.Rule != RuleProtect || !strings.Contains(err.Error(), "repository") && !strings.Contains(err.Error(), "git config") {
			t.Errorf("%s: Write(%s) = %v; want a protect refusal by the repository rules", row.name, row.path, err)
		}
		if _, err := os.Lstat(filepath.Join(ws, row.absent)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %s exists after the refusal: %v", row.name, row.absent, err)
		}
		if cerr := tab.CheckWrite(row.path); cerr == nil {
			t.Errorf("%s: CheckWrite(%s) allowed what Write refused (%v)", row.name, row.path, err)
		}
		// The host's next git in r runs nothing planted.
		hostGitLog(t, filepath.Join(ws, "r"))
		mustBeAbsent(t, mark)
	}
	if err := tab.Write("r/config", "[core]\n\tbare = true\n"); err != nil {
		t.Errorf("a config on the safe list into a complete shape: %v", err)
	}
	if err := tab.Write("r/config", evil); err == nil {
		t.Error("a second config over the one the tools wrote: allowed")
	}
	// HEAD last, around a planted config: refused, HEAD not made.
	for _, w := range [][2]string{{"p/config", evil}, {"p/objects/x", "x"}, {"p/refs/x", "x"}} {
		if err := tab.Write(w[0], w[1]); err != nil {
			t.Fatalf("Write(%s): %v", w[0], err)
		}
	}
	if err := tab.Write("p/HEAD", "ref: refs/heads/master\n"); err == nil {
		t.Error("HEAD completing a shape around a planted config: allowed")
	}
	if err := tab.CheckWrite("p/HEAD"); err == nil {
		t.Error("CheckWrite(p/HEAD): allowed")
	}
	mustBeAbsent(t, filepath.Join(ws, "p/HEAD"))
	// objects last, around a safe config: taken, and rewritten through a
	// file of the tools' own.
	for _, w := range [][2]string{{"s/config", "[core]\n\tbare = true\n"}, {"s/HEAD", "ref: refs/heads/master\n"}, {"s/refs/x", "x"}} {
		if err := tab.Write(w[0], w[1]); err != nil {
			t.Fatalf("Write(%s): %v", w[0], err)
		}
	}
	before, _ := os.Lstat(filepath.Join(ws, "s/config"))
	if err := tab.Write("s/objects/info/alternates", "/x\n"); err != nil {
		t.Errorf("objects completing a shape around a safe config: %v", err)
	}
	if after, err := os.Lstat(filepath.Join(ws, "s/config")); err != nil || os.SameFile(before, after) {
		t.Errorf("the safe config was not rewritten through a new file: %v", err)
	}
	for _, d := range []string{"r", "p", "s"} {
		hostGitLog(t, filepath.Join(ws, d))
	}
	mustBeAbsent(t, mark)
}

// hostCommit makes a repository with one commit on the host and returns
// its objects directory and the commit's name.
func hostCommit(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, ".git", "objects"), strings.TrimSpace(string(out))
}

func mustBeAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: %v", p, err)
	}
}

// TestWriteGitCodeProtected: what spec.WithAliases adds for the kernel
// backends (a protected config's include.path target, its core.hooksPath
// directory, the program a core.fsmonitor names) is refused to the file
// tools and to check too; the hostile review of issue 21 wrote all three
// through the MCP write tool, and the host's git status then ran them.
func TestWriteGitCodeProtected(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ws := t.TempDir()
	mark := filepath.Join(t.TempDir(), "pwned")
	for _, args := range [][]string{{"init", "-q", ws}, {"-C", ws, "config", "include.path", "../inc.cfg"},
		{"-C", ws, "config", "core.hooksPath", ".githooks"}, {"-C", ws, "config", "core.fsmonitor", "./tools/f.sh"}} {
		if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, b)
		}
	}
	orig := map[string]string{"inc.cfg": "[user]\n", ".githooks/pre-commit": "#!/bin/sh\nexit 0\n", "tools/f.sh": "#!/bin/sh\nexit 1\n"}
	for name, content := range orig {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := spec.Profile("workspace", ws)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := New(&cfg.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	planted := map[string]string{
		"inc.cfg":                     "[core]\n\tfsmonitor = \"touch " + mark + "; false\"\n",
		".githooks/pre-commit":        "#!/bin/sh\ntouch " + mark + "\n",
		".githooks/post-index-change": "#!/bin/sh\ntouch " + mark + "\n",
		"tools/f.sh":                  "#!/bin/sh\ntouch " + mark + "\nexit 1\n",
	}
	for name, content := range planted {
		p := filepath.Join(ws, name)
		err := tb.Write(p, content)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Err != ErrReadOnly {
			t.Errorf("Write %s: %v; want a protect refusal", name, err)
		}
		if tb.CanWrite(p) {
			t.Errorf("CanWrite %s = true; check must refuse what Write refuses", name)
		}
		got, _ := os.ReadFile(p)
		if string(got) != orig[name] {
			t.Errorf("%s changed: %q", name, got)
		}
	}
	for _, args := range [][]string{{"-C", ws, "status"}, {"-C", ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		_ = exec.Command("git", args...).Run()
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the host's git ran a planted program")
	}
}
