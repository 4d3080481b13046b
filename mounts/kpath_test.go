package mounts

import (
	"os"
	"path/filepath"
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
