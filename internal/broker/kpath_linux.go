package broker

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// A path git reads from a file the sandbox wrote (a gitdir line, a
// core.worktree) is decided where the kernel takes it, never where a
// lexical clean would: "a/lnk/.." is the parent of lnk's target, not a.
// kernelPath resolves it in the sandbox's root (openat2 with
// RESOLVE_IN_ROOT, which follows every symlink and applies ".." after
// it, as git's chdir and realpath do).
//
// A path that does not exist yet (git submodule add opens the checkout's
// .git file before it makes .git/modules/NAME: strace of git 2.39, whose
// clone --separate-git-dir writes the gitfile first; the first submodule
// finds no .git/modules either) is resolved to its longest existing
// prefix, and the rest is appended only when it can still mean only one
// thing: no "..", no dangling symlink at the first missing name, and
// every missing place one where the sandbox can never make a symlink
// (fixed says which). Anything else fails closed.

// kernelPath returns the sandbox path p (absolute, not cleaned) resolves
// to in root. fixed reports whether a missing path could never become a
// symlink; nil refuses every missing path.
func kernelPath(root int, p string, fixed func(string) bool) (string, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags}
	fd, err := unix.Openat2(root, p, how)
	if err == nil {
		defer unix.Close(fd)
		return fdPath(fd)
	}
	if err != unix.ENOENT {
		return "", fmt.Errorf("%s does not resolve: %w", p, err)
	}
	comps := strings.Split(p, "/")
	base, baseFD := "/", -1
	defer func() {
		if baseFD >= 0 {
			unix.Close(baseFD)
		}
	}()
	i := 1
	for ; i < len(comps); i++ {
		fd, err := unix.Openat2(root, "/"+strings.Join(comps[1:i+1], "/"), how)
		if err == unix.ENOENT {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s does not resolve: %w", p, err)
		}
		if baseFD >= 0 {
			unix.Close(baseFD)
		}
		baseFD = fd
		if base, err = fdPath(fd); err != nil {
			return "", fmt.Errorf("%s does not resolve: %w", p, err)
		}
	}
	if baseFD < 0 || i >= len(comps) {
		return "", fmt.Errorf("%s does not resolve", p)
	}
	var st unix.Stat_t
	if unix.Fstatat(baseFD, comps[i], &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return "", fmt.Errorf("%s leads through a dangling symlink, %s/%s", p, strings.TrimSuffix(base, "/"), comps[i])
	}
	out := strings.TrimSuffix(base, "/")
	for _, c := range comps[i:] {
		switch c {
		case "", ".":
			continue
		case "..":
			return "", fmt.Errorf("%s does not exist and has \"..\" after a missing name", p)
		}
		out += "/" + c
		if fixed == nil || !fixed(out) {
			return "", fmt.Errorf("%s does not exist, and %s could still become a symlink", p, out)
		}
	}
	if out == "" {
		out = "/"
	}
	return out, nil
}

// dotDotAfterName reports whether the relative path p has ".." after a
// name ("a/.."): git never writes one in a gitdir line or core.worktree
// (its relative paths climb first, then descend), and a name there could
// become a symlink after the check, which would change where ".." leads.
func dotDotAfterName(p string) bool {
	named := false
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}

// rootResolver resolves sandbox paths in the broker's sandbox root, for
// the checks that have no call at hand: nil when the root is not known
// yet (the caller then fails closed).
func (b *Broker) rootResolver() func(string) (string, error) {
	root := int(b.root.Load())
	if root <= 0 {
		return nil
	}
	return func(p string) (string, error) { return kernelPath(root, p, nil) }
}

// symlinkFree reports whether p, an absolute path with no ".." after a
// name, reached resolved without following a symlink: its leading ".."
// climb real directories, so its lexical form is then where it leads.
// git writes gitdir lines and core.worktree as real paths (it computes
// them from realpath), so a symlink on the way is no git of the host's
// making, and one the sandbox could turn elsewhere after the check.
func symlinkFree(p, resolved string) bool {
	return cleanAbs(p) == resolved
}
