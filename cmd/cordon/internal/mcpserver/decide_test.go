package mcpserver_test

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// decideRow is one write every writer must decide alike.
type decideRow struct {
	name    string
	setup   func(t *testing.T, ws string) // on the host, before the write
	path    string                        // relative to the workspace
	content string
	allowed bool
	// checkAllowed is `cordon check`'s answer where it differs: it knows
	// the path, not the content, and answers for a command's create.
	checkAllowed *bool
}

// writer makes one write in a fresh project and reports whether it was
// allowed.
type writer struct {
	name  string
	write func(t *testing.T, f fixture, sb *cordon.Sandbox, row decideRow) bool
}

// TestIntegrationOneDecisionEveryWriter runs one table of writes (plants,
// redirects, repository shapes, protected names, patterns) through every
// writer: a command in the sandbox (the broker, through the MCP shell
// tool, writing as the tools do: a file renamed into place), the Go API's
// Files().Write, the MCP write tool, and `cordon check` (the Access it
// prints). Each writer gets the same verdict for each write; a refused one
// leaves the workspace exactly as it was, and the host's git in the
// planted repository (git log on a terminal, whose core.pager would touch
// a marker) runs nothing.
func TestIntegrationOneDecisionEveryWriter(t *testing.T) {
	testenv.RequireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	mark := filepath.Join(t.TempDir(), "pwned")
	objects, commit := hostCommit(t)
	evil := "[core]\n\tpager = touch " + mark + "; cat\n"
	rows := decideRows(objects, commit, evil)
	writers := []writer{
		{"broker", writeByCommand},
		{"files", func(_ *testing.T, _ fixture, sb *cordon.Sandbox, row decideRow) bool {
			return sb.Files().Write(row.path, row.content) == nil
		}},
		{"mcp write", func(t *testing.T, _ fixture, sb *cordon.Sandbox, row decideRow) bool {
			_, isErr := call(t, connectInMemory(t, sb), "write", map[string]any{"path": row.path, "content": row.content})
			return !isErr
		}},
		{"check", func(_ *testing.T, _ fixture, sb *cordon.Sandbox, row decideRow) bool {
			a := sb.Access(row.path, true)
			return a.Commands == nil && a.Tools == nil && sb.Files().CanWrite(row.path)
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			for _, w := range writers {
				f := defaultProtectFixture(t)
				if row.setup != nil {
					row.setup(t, f.ws)
				}
				cfg, err := spec.Load(f.config)
				if err != nil {
					t.Fatal(err)
				}
				sb := sandboxOf(t, cfg)
				before := treeHash(t, f.ws)
				got := w.write(t, f, sb, row)
				want := row.allowed
				if w.name == "check" && row.checkAllowed != nil {
					want = *row.checkAllowed
				}
				if got != want {
					t.Errorf("%s: allowed = %v, want %v", w.name, got, want)
				}
				after := treeHash(t, f.ws)
				switch {
				case w.name == "check" || !got:
					if d := diffTrees(before, after); len(d) > 0 {
						t.Errorf("%s: refused (or only asked), yet the workspace changed: %v", w.name, d)
					}
				default:
					if b, err := os.ReadFile(filepath.Join(f.ws, row.path)); err != nil || string(b) != row.content {
						t.Errorf("%s: allowed, yet %s holds %q (%v)", w.name, row.path, b, err)
					}
				}
				hostGitLog(t, filepath.Join(f.ws, "r"))
				if _, err := os.Lstat(mark); err == nil {
					t.Fatalf("%s: the host's git log ran a planted pager", w.name)
				}
			}
		})
	}
}

func decideRows(objects, commit, evil string) []decideRow {
	no, yes := false, true
	head := func(ws string) string { return filepath.Join(ws, "r") }
	put := func(t *testing.T, p, s string) { writeFile(t, p, s) }
	return []decideRow{
		{name: "config with core.pager into a complete shape", path: "r/config", content: evil,
			setup: func(t *testing.T, ws string) {
				put(t, head(ws)+"/HEAD", "ref: refs/heads/master\n")
				put(t, head(ws)+"/objects/info/alternates", objects+"\n")
				put(t, head(ws)+"/refs/heads/master", commit+"\n")
			}},
		{name: "HEAD completes a shape around a planted config", path: "r/HEAD", content: "ref: refs/heads/master\n",
			setup: func(t *testing.T, ws string) {
				put(t, head(ws)+"/objects/info/alternates", objects+"\n")
				put(t, head(ws)+"/refs/heads/master", commit+"\n")
				put(t, head(ws)+"/config", evil)
			}},
		{name: "objects completes a shape around a planted config", path: "r/objects/info/alternates", content: objects + "\n",
			setup: func(t *testing.T, ws string) {
				put(t, head(ws)+"/HEAD", "ref: refs/heads/master\n")
				put(t, head(ws)+"/refs/heads/master", commit+"\n")
				put(t, head(ws)+"/config", evil)
			}},
		{name: "a hook in a bare repository", path: "b.git/hooks/post-update", content: "#!/bin/sh\n",
			setup: func(t *testing.T, ws string) { hostGitRun(t, "init", "-q", "--bare", filepath.Join(ws, "b.git")) }},
		{name: "commondir beside HEAD", path: "r/commondir", content: "../q\n",
			setup: func(t *testing.T, ws string) { put(t, head(ws)+"/HEAD", "ref: refs/heads/master\n") }},
		{name: "a safe config into a complete shape", path: "r/config", content: "[core]\n\tbare = true\n", allowed: true, checkAllowed: &no,
			setup: func(t *testing.T, ws string) {
				put(t, head(ws)+"/HEAD", "ref: refs/heads/master\n")
				put(t, head(ws)+"/objects/info/alternates", objects+"\n")
				put(t, head(ws)+"/refs/heads/master", commit+"\n")
			}},
		{name: "a .git file redirecting git to an unguarded directory", path: "sub/.git", content: "gitdir: ../evil\n", checkAllowed: &yes,
			setup: func(t *testing.T, ws string) { put(t, filepath.Join(ws, "sub", "a.go"), "package a\n") }},
		{name: "a .git file redirecting git to a submodule's gitdir", path: "sub/.git", content: "gitdir: ../.git/modules/sub\n", allowed: true,
			setup: func(t *testing.T, ws string) {
				put(t, filepath.Join(ws, "sub", "a.go"), "package a\n")
				mkdir(t, filepath.Join(ws, ".git", "modules", "sub"))
			}},
		{name: "a .git file redirecting git to a submodule's gitdir not made yet", path: "sub/.git", content: "gitdir: ../.git/modules/sub\n", allowed: true,
			setup: func(t *testing.T, ws string) { put(t, filepath.Join(ws, "sub", "a.go"), "package a\n") }},
		{name: "a .git file whose gitdir leaves a symlink with ..", path: "sub/.git", content: "gitdir: ../.git/y/..\n", checkAllowed: &yes,
			setup: func(t *testing.T, ws string) {
				put(t, filepath.Join(ws, "sub", "a.go"), "package a\n")
				mkdir(t, filepath.Join(ws, "evil", "inner"))
				symlink(t, filepath.Join(ws, "evil", "inner"), filepath.Join(ws, ".git", "y"))
			}},
		{name: "a .git file whose gitdir goes through a symlink", path: "sub/.git", content: "gitdir: ../gl\n", checkAllowed: &yes,
			setup: func(t *testing.T, ws string) {
				put(t, filepath.Join(ws, "sub", "a.go"), "package a\n")
				symlink(t, ".git", filepath.Join(ws, "gl"))
			}},
		{name: "a gitdir's config with core.worktree in its checkout", path: ".git/lib/config", content: "[core]\n\tworktree = ../../lib\n",
			allowed: true, checkAllowed: &no, setup: gitdirShape},
		{name: "a gitdir's config with core.worktree outside its checkout", path: ".git/lib/config", content: "[core]\n\tworktree = ../../..\n",
			setup: gitdirShape},
		{name: "a gitdir's config with core.worktree through a symlink", path: ".git/lib/config", content: "[core]\n\tworktree = ../../lnk\n",
			setup: func(t *testing.T, ws string) { gitdirShape(t, ws); symlink(t, "lib", filepath.Join(ws, "lnk")) }},
		{name: "a protected hook", path: ".git/hooks/post-checkout", content: "#!/bin/sh\n"},
		{name: "a denied name", path: ".env", content: "TOKEN=x\n"},
		{name: "an ordinary file", path: "src/new.go", content: "package main\n", allowed: true},
	}
}

// defaultProtectFixture is newFixture with the default protect list, the
// one a user gets (its submodules' and worktrees' gitdirs guarded, which
// a gitdir redirect may point at), instead of the fixture's short one.
func defaultProtectFixture(t *testing.T) fixture {
	t.Helper()
	f := newFixture(t, "")
	b, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	const short = "  protect: [.git/hooks, .git/config]\n  protect_defaults: false\n"
	if !strings.Contains(string(b), short) {
		t.Fatalf("the fixture's config has no %q to drop:\n%s", short, b)
	}
	writeFile(t, f.config, strings.Replace(string(b), short, "", 1))
	return f
}

// gitdirShape makes, in the workspace's .git, a gitdir no pattern
// covers (HEAD, objects and refs in .git/lib: its config is decided by
// its content, core.worktree included, by every writer) and the checkout
// directory lib its core.worktree may name. A submodule's own gitdir,
// .git/modules/NAME, has a protected config, which the file tools never
// write.
func gitdirShape(t *testing.T, ws string) {
	t.Helper()
	writeFile(t, filepath.Join(ws, ".git", "lib", "HEAD"), "ref: refs/heads/master\n")
	mkdir(t, filepath.Join(ws, ".git", "lib", "objects"))
	mkdir(t, filepath.Join(ws, ".git", "lib", "refs"))
	mkdir(t, filepath.Join(ws, "lib"))
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeByCommand writes as a command in the sandbox (the broker decides
// its calls), through the MCP shell tool: the parents made, the content
// written to a file beside the target and renamed over it with rename(2),
// as the file tools and git write (GNU mv asks RENAME_NOREPLACE, which the
// broker does not take for a repository's config); the file beside is
// removed whatever happens.
func writeByCommand(t *testing.T, _ fixture, sb *cordon.Sandbox, row decideRow) bool {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Sandbox: sb, Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tmp := row.path + ".w"
	script := "mkdir -p \"$(dirname " + row.path + ")\" && echo " + base64.StdEncoding.EncodeToString([]byte(row.content)) +
		" | base64 -d > " + tmp + " && perl -e 'rename $ARGV[0], $ARGV[1] or die \"$!\\n\"' " + tmp + " " + row.path + "; rc=$?; rm -f " + tmp + " 2>/dev/null; exit $rc"
	text, isErr := call(t, cs, "shell", map[string]any{"command": script})
	if isErr && !strings.Contains(text, "sandbox_denied") {
		t.Errorf("broker: %s failed, but not as a refusal:\n%s", row.path, text)
	}
	return !isErr
}

// hostCommit makes a repository with one commit on the host and returns
// its objects directory and the commit's name: a planted repository's
// alternates point there, so the host's git log gets as far as a pager.
func hostCommit(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	hostGitRun(t, "init", "-q", dir)
	hostGitRun(t, "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, ".git", "objects"), strings.TrimSpace(string(out))
}

func hostGitRun(t *testing.T, args ...string) {
	t.Helper()
	if b, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, b)
	}
}

// hostGitLog runs the host's git log in dir as a person would, also on a
// terminal (script), where git runs a configured pager.
func hostGitLog(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return
	}
	_ = exec.Command("git", "-C", dir, "log", "-1").Run()
	if p, err := exec.LookPath("script"); err == nil {
		_ = exec.Command(p, "-qc", "cd '"+dir+"' && git log -1", "/dev/null").Run()
	}
}
