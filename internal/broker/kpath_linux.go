package broker

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// A path git reads from a file the sandbox wrote (a gitdir line, a
// core.worktree) is decided by package decide where the kernel takes it,
// never where a lexical clean would: "a/lnk/.." is the parent of lnk's
// target, not a. kernelPath is the broker's resolver for it: it resolves
// the path in the sandbox's root (openat2 with RESOLVE_IN_ROOT, which
// follows every symlink and applies ".." after it, as git's chdir and
// realpath do).
//
// A path that does not exist yet (git submodule add opens the checkout's
// .git file before it makes .git/modules/NAME: strace of git 2.39, whose
// clone --separate-git-dir writes the gitfile first; the first submodule
// finds no .git/modules either) is resolved to its longest existing
// prefix, and the rest is appended when it can be: no "..", and no
// dangling symlink at the first missing name. Whether the missing part
// could still become a symlink is decide's to say (Resolved.Missing).

// kernelPath returns where the sandbox path p (absolute, not cleaned)
// leads in root.
func kernelPath(root int, p string) (decide.Resolved, error) {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: resolveFlags}
	fd, err := unix.Openat2(root, p, how)
	if err == nil {
		defer unix.Close(fd)
		g, err := fdPath(fd)
		return decide.Resolved{Path: g}, err
	}
	if err != unix.ENOENT {
		return decide.Resolved{}, fmt.Errorf("%s does not resolve: %w", p, err)
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
			return decide.Resolved{}, fmt.Errorf("%s does not resolve: %w", p, err)
		}
		if baseFD >= 0 {
			unix.Close(baseFD)
		}
		baseFD = fd
		if base, err = fdPath(fd); err != nil {
			return decide.Resolved{}, fmt.Errorf("%s does not resolve: %w", p, err)
		}
	}
	if baseFD < 0 || i >= len(comps) {
		return decide.Resolved{}, fmt.Errorf("%s does not resolve", p)
	}
	var st unix.Stat_t
	if unix.Fstatat(baseFD, comps[i], &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return decide.Resolved{}, fmt.Errorf("%s leads through a dangling symlink, %s/%s", p, strings.TrimSuffix(base, "/"), comps[i])
	}
	out := decide.Resolved{Path: strings.TrimSuffix(base, "/")}
	for _, c := range comps[i:] {
		switch c {
		case "", ".":
			continue
		case "..":
			return decide.Resolved{}, fmt.Errorf("%s does not exist and has \"..\" after a missing name", p)
		}
		out.Path += "/" + c
		out.Missing++
	}
	if out.Path == "" {
		out.Path = "/"
	}
	return out, nil
}

// resolverIn is kernelPath in root, for package decide.
func resolverIn(root int) decide.Resolver {
	return func(p string) (decide.Resolved, error) { return kernelPath(root, p) }
}

// rootResolver resolves sandbox paths in the broker's sandbox root, for
// the checks that have no call at hand: nil when the root is not known
// yet (decide then refuses, fail closed).
func (b *Broker) rootResolver() decide.Resolver {
	root := int(b.root.Load())
	if root <= 0 {
		return nil
	}
	return resolverIn(root)
}
