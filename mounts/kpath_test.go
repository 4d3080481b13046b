package mounts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestWriteGitLinkKernelPath is finding 2 of issue 21 for the write
// tool: a .git file's gitdir is decided where the kernel takes it.
// "../.git/y/.." with y a symlink to evil/inner is evil, which no rule
// protects, not .git; a gitdir with ".." after a name is refused outright,
// and so is a missing one that a link could still redirect.
func TestWriteGitLinkKernelPath(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	g := filepath.Join(f.ws, ".git")
	mkTree(t, f.base, "dir ws/evil/inner", "dir ws/sub", "dir ws/.git/modules/lib",
		"symlink ws/.git/y "+filepath.Join(f.ws, "evil", "inner"), "symlink ws/lnk evil", "symlink ws/gl .git")
	f.sb.Protect = append(f.sb.Protect, filepath.Join(g, "commondir"), filepath.Join(g, "modules"))
	tab := f.table(t)
	for _, content := range []string{
		"gitdir: ../.git/y/..\n",
		"gitdir: " + g + "/y/..\n",
		"gitdir: ../lnk/../.git\n",
		"gitdir: ../lnk\n",
		"gitdir: ../gl\n", // a link, even to .git: it could be turned later
		"gitdir: ../newdir/.git\n",
		"gitdir: ../.git/y/../..\n",
		"gitdir: \n",
	} {
		err := tab.Write("sub/.git", content)
		wantErr(t, err, ErrReadOnly)
		assertMissing(t, f.p("ws/sub/.git"))
	}
	for _, content := range []string{"gitdir: ../.git\n", "gitdir: ../.git/modules/lib\n", "gitdir: ../.git/modules/new\n"} {
		if err := tab.Write("sub/.git", content); err != nil {
			t.Errorf("%q: %v", content, err)
		}
		if err := os.Remove(f.p("ws/sub/.git")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriteWorktreeKernelPath is finding 3 of issue 21 for the write
// tool: a core.worktree in a config the tools write into a repository
// shape in a .git directory is decided by package decide on the tools'
// walk, as the broker decides it on the kernel's: inside the checkout
// and outside its .git, with no ".." after a name and no symlink on the
// way. A refused config is not written.
func TestWriteWorktreeKernelPath(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	mkTree(t, f.base, "dir ws/.git/lib/objects", "dir ws/.git/lib/refs", "file ws/.git/lib/HEAD ref:",
		"dir ws/lib", "dir ws/outside/deep", "symlink ws/lnk outside/deep", "symlink ws/inlnk lib")
	tab := f.table(t)
	cfg := ".git/lib/config"
	for _, val := range []string{
		"../../lnk/..",     // ".." after a name
		"../../lnk",        // through a symlink (out of the checkout's own tree)
		"../../inlnk",      // through a symlink, even to a place inside
		"../../..",         // outside the checkout
		"../../.git/hooks", // in .git
		"../../missing",    // a symlink could appear there later
	} {
		err := tab.Write(cfg, "[core]\n\tworktree = "+val+"\n")
		wantErr(t, err, ErrReadOnly)
		if err != nil && !strings.Contains(err.Error(), "core.worktree") {
			t.Errorf("%s: refused without naming core.worktree: %v", val, err)
		}
		assertMissing(t, filepath.Join(f.ws, cfg))
	}
	if err := tab.Write(cfg, "[core]\n\tworktree = ../../lib\n"); err != nil {
		t.Errorf("a core.worktree inside the checkout: %v", err)
	}
}
