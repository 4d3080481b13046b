package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A workspace made by `git worktree add`, or a submodule's checkout, holds
// a ".git" file ("gitdir: PATH") that sends git to a directory in the main
// repository's (the superproject's) .git: .git/worktrees/NAME, whose
// commondir names that .git, or .git/modules/NAME. That lies outside the
// workspace, so git inside fails ("not a git repository") unless the .git
// is mounted. GitDirMount finds it, as the host's kernel resolves the
// paths (hostWalk), and gives the mount: read-write (read-only with a
// read-only workspace), and, being a mount whose source is named .git, with
// what the default list protects in a workspace's own .git protected in it
// (gitDirProtect: hooks, config, commondir, config.worktree, the modules'
// and worktrees' own), whatever the protect list says.

// GitDirMount returns the mount of the main repository's .git that sb's
// workspace needs when it is a linked worktree or a submodule checkout
// whose git directory lies outside it; ok is false when it needs none (no
// .git file at the root, a gitdir inside the workspace, a mount that shows
// it already, or git_worktree: false). A gitdir outside the workspace that
// is in no .git directory, or whose repository does not name the
// workspace back (see below), is an error naming the fix.
func GitDirMount(sb *Sandbox) (m Mount, ok bool, err error) {
	if sb.Root == "" || sb.NoGitWorktree {
		return Mount{}, false, nil
	}
	dotGit := filepath.Join(sb.Root, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return Mount{}, false, nil
	}
	data, err := os.ReadFile(dotGit)
	if err != nil {
		return Mount{}, false, nil
	}
	target, found := strings.CutPrefix(string(data), "gitdir: ")
	if !found {
		return Mount{}, false, nil
	}
	target = strings.TrimRight(target, "\r\n")
	if !filepath.IsAbs(target) {
		target = sb.Root + "/" + target
	}
	gitdir, _, walked := hostWalk(target)
	if !walked || !isDir(gitdir) || within(gitdir, sb.Root) {
		return Mount{}, false, nil
	}
	common, linked := gitdir, false
	if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		c := strings.TrimRight(string(b), "\r\n")
		if !filepath.IsAbs(c) {
			c = gitdir + "/" + c
		}
		if end, _, ok := hostWalk(c); ok && isDir(end) {
			common, linked = end, true
		}
	}
	src := common
	for src != "/" && filepath.Base(src) != ".git" {
		src = filepath.Dir(src)
	}
	const fix = "run cordon in the main checkout, or set git_worktree: false under sandbox and mount that git directory yourself, with protect entries for its hooks and config"
	if src == "/" {
		return Mount{}, false, &FieldError{Field: "sandbox.root",
			Problem: fmt.Sprintf("the workspace's .git sends git to %s, outside the workspace and in no .git directory, which cordon does not mount for it", gitdir),
			Fix:     fix}
	}
	// A .git file is also what a sandbox may have written (the broker
	// lets one point at any .git/worktrees or .git/modules it could see):
	// the main .git is mounted only when it names this workspace back,
	// as git worktree add and git submodule leave it: a linked worktree's
	// gitdir file names the workspace's .git, a submodule checkout lies in
	// the superproject's own checkout.
	if linked {
		b, _ := os.ReadFile(filepath.Join(gitdir, "gitdir"))
		back, _, ok := hostWalk(strings.TrimRight(string(b), "\r\n"))
		if self, _, sok := hostWalk(dotGit); !ok || !sok || back != self {
			return Mount{}, false, &FieldError{Field: "sandbox.root",
				Problem: fmt.Sprintf("the workspace's .git sends git to %s, whose gitdir file does not name this workspace back, so cordon does not mount %s for it", gitdir, src),
				Fix:     "run git worktree repair in the workspace on the host, or " + fix}
		}
	} else if !within(sb.Root, filepath.Dir(src)) {
		return Mount{}, false, &FieldError{Field: "sandbox.root",
			Problem: fmt.Sprintf("the workspace's .git sends git to %s, in a repository whose checkout does not hold the workspace, so cordon does not mount %s for it", gitdir, src),
			Fix:     fix}
	}
	for _, x := range sb.Mounts {
		if within(src, x.Source) {
			return Mount{}, false, nil
		}
	}
	return Mount{Source: src, Target: src, Readonly: sb.Readonly}, true, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
