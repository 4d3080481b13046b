package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// buildTree makes the entries below dir: "dir a", "file a/b",
// "symlink c TARGET" (TARGET with {} standing for dir).
func buildTree(t *testing.T, dir string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		f := strings.Fields(e)
		p := filepath.Join(dir, f[1])
		var err error
		switch f[0] {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			err = os.WriteFile(p, nil, 0o644)
		case "symlink":
			err = os.Symlink(strings.ReplaceAll(f[2], "{}", dir), p)
		default:
			t.Fatalf("bad entry %q", e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hostRoot is "/" as a root descriptor: the test's tree is resolved in
// the test's own view.
func hostRoot(t *testing.T) int {
	t.Helper()
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(root) })
	return root
}

// TestKernelPath: the broker's resolver for package decide follows
// symlinks and applies ".." after them, as the kernel does, and reports
// how much of a path is missing; decide says whether that part may be.
func TestKernelPath(t *testing.T) {
	w := t.TempDir()
	buildTree(t, w, "dir evil/inner", "dir .git/modules", "symlink .git/y {}/evil/inner",
		"symlink rel evil/inner", "symlink dangling {}/nowhere", "file plain")
	root := hostRoot(t)
	for _, tc := range []struct {
		p, want string // want "" for a refusal
		missing int
	}{
		{w + "/.git/y/..", w + "/evil", 0},
		{w + "/rel/../..", w, 0},
		{w + "/.git/y/../../.git", w + "/.git", 0},
		{w + "/.git/modules/lib", w + "/.git/modules/lib", 1},
		{w + "/.git/modules/lib/modules/sub", w + "/.git/modules/lib/modules/sub", 3},
		{w + "/.git/y/../modules/lib", w + "/evil/modules/lib", 2},
		{w + "/.git/modules/lib/../../evil", "", 0}, // ".." after a missing name
		{w + "/dangling/.git/modules/x", "", 0},     // through a dangling symlink
		{w + "/plain/x", "", 0},                     // ENOTDIR
	} {
		got, err := kernelPath(root, tc.p)
		if tc.want == "" {
			if err == nil {
				t.Errorf("kernelPath(%s) = %+v, want a refusal", tc.p, got)
			}
			continue
		}
		if err != nil || got.Path != tc.want || got.Missing != tc.missing {
			t.Errorf("kernelPath(%s) = %+v, %v; want %s with %d missing", tc.p, got, err, tc.want, tc.missing)
		}
	}
}

// TestCheckGitFileKernelPath is finding 2 of issue 21: a gitdir line is
// decided where the kernel takes it. "../.git/y/.." with y a symlink to
// evil/inner is evil, which no rule guards, not .git.
func TestCheckGitFileKernelPath(t *testing.T) {
	w := t.TempDir()
	buildTree(t, w, "dir evil/inner", "dir .git/modules/lib", "dir .git/worktrees/wt", "dir sub", "dir app/lib",
		"symlink .git/y {}/evil/inner", "symlink lnk {}/evil", "symlink ok {}/.git")
	root := hostRoot(t)
	b := &Broker{policy: globPolicy{w + "/.git/hooks", w + "/.git/config", w + "/.git/commondir", w + "/.git/worktrees"}}
	for _, tc := range []struct {
		p, data string
		ok      bool
	}{
		{w + "/app/lib/.git", "gitdir: ../../.git/modules/lib\n", true},
		{w + "/app/lib/.git", "gitdir: ../../.git/modules/new\n", true}, // not made yet
		{w + "/wt/.git", "gitdir: " + w + "/.git/worktrees/wt\n", true},
		{w + "/app/.git", "not a redirect", true},
		{w + "/sub/.git", "gitdir: ../.git\n", true},
		{w + "/sub/.git", "gitdir: ../ok\n", false}, // a symlink, even to .git: it could be turned later
		{w + "/sub/.git", "gitdir: ../.git/y/..\n", false},
		{w + "/sub/.git", "gitdir: " + w + "/.git/y/..\n", false},
		{w + "/sub/.git", "gitdir: ../lnk\n", false},
		{w + "/sub/.git", "gitdir: ../lnk/../.git\n", false},
		{w + "/sub/.git", "gitdir: ../evil\n", false},
		{w + "/sub/.git", "gitdir: /tmp/x\n", false},
		{w + "/sub/.git", "gitdir: ../.git/modules/../../evil\n", false},
		{w + "/sub/.git", "gitdir: ../newdir/.git/modules/x\n", false},
		{w + "/sub/.git", "gitdir: \n", false},
	} {
		if err := b.checkGitFile(root, tc.p, []byte(tc.data)); (err == nil) != tc.ok {
			t.Errorf("checkGitFile(%s, %q) = %v, want ok %v", tc.p, tc.data, err, tc.ok)
		}
	}
}

// TestCheckWorktreeKernelPath is finding 3 of issue 21: core.worktree is
// decided (decide.Worktree) on the broker's resolution, where git's chdir
// takes it, from the config's directory.
// "../lnk/.." with lnk a symlink out of the checkout leaves it.
func TestCheckWorktreeKernelPath(t *testing.T) {
	w := t.TempDir()
	buildTree(t, w, "dir outside/deep", "dir app/.git/modules/lib", "dir app/lib", "dir app/.git/modules/lib/modules/sub",
		"dir app/lib/sub", "symlink app/lnk {}/outside/deep", "symlink app/.git/modules/lnk {}/outside/deep", "symlink app/inlnk {}/app/lib")
	root := hostRoot(t)
	resolve := resolverIn(root)
	cfg := w + "/app/.git/modules/lib/config"
	for _, tc := range []struct {
		val, cfg string
		ok       bool
	}{
		{"../../../lib", cfg, true},
		{"../../../../../lib/sub", w + "/app/.git/modules/lib/modules/sub/config", true},
		{w + "/app/lib", cfg, true},
		{"..", w + "/app/.git/config", true},
		{"../../../lnk/..", cfg, false},
		{"../../lnk/..", cfg, false},
		{"../lnk/..", w + "/app/.git/config", false},
		{"../../../lnk", cfg, false},
		{"../../../inlnk", cfg, false}, // a link inside the checkout: it could be turned later
		{"../../../.git/hooks", cfg, false},
		{"../../../../outside", cfg, false},
		{"/home/u", cfg, false},
		{"../../../missing", cfg, false},
		{"x", w + "/app/config", false},
	} {
		if err := decide.Worktree(tc.val, tc.cfg, resolve); (err == nil) != tc.ok {
			t.Errorf("decide.Worktree(%q, %q) = %v, want ok %v", tc.val, tc.cfg, err, tc.ok)
		}
	}
	if err := decide.Worktree("../../../lib", cfg, nil); err == nil {
		t.Error("a core.worktree was taken with no root to resolve it in")
	}
}
