package broker

import (
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Directories git takes for a repository. git's discovery looks, at each
// level from the working directory up, for DIR/.git and then at DIR
// itself: a directory holding HEAD, objects and refs is a (bare)
// repository to it, whatever its name, and its config and hooks run
// commands (core.fsmonitor, core.pager, core.hooksPath, a hook) when a
// person on the host runs git in it or below it. The protect patterns
// name .git directories only, so the broker guards such a shape itself,
// decided on the names alone (no pattern) and under one lock (bareMu), so
// that its pieces cannot be made in an order or by threads that slip
// through:
//
//   - the shape: HEAD, objects and refs all present (of any type: a
//     dangling symlink or a HEAD git would not parse yet counts, so that
//     no later change outside these calls completes it unchecked);
//   - completing it (the last of the three made, by any call) is refused
//     unless the directory has no commondir and no config.worktree, its
//     hooks directory (if any) is a directory holding only "*.sample"
//     names, and its config (if any) is a regular file that the broker
//     wrote or that checkGitConfig takes, which the broker then rewrites
//     through a copy of its own (so that a descriptor the command kept
//     open on it writes to a file no longer there);
//   - in a shaped directory, config, config.worktree and commondir are
//     never made, linked or opened for writing by the command; config is
//     replaced only as git does it, config.lock renamed over it, through
//     renameGitConfig; hooks may be made as an empty directory, and only
//     "*.sample" names go in it.
//
// `git init --bare` and `git clone --bare` make HEAD, then config (through
// config.lock), then objects, which completes the shape: their config
// holds only keys on the safe list, so it is taken and rewritten.

var (
	shapeNames  = map[string]bool{"HEAD": true, "objects": true, "refs": true}
	bareGuarded = map[string]bool{"config": true, "config.worktree": true, "commondir": true}
)

const bareRule = "protect (a directory git takes for a repository: it holds HEAD, objects and refs)"

// bareState serializes the decisions on the names the shape rules read.
type bareState struct{ mu sync.Mutex }

// bareRelevant reports whether a name made, removed or opened for writing
// at p may matter to the shape rules: on the name alone, so that every
// other call costs nothing.
func bareRelevant(p string) bool {
	i := strings.LastIndexByte(p, '/')
	name := p[i+1:]
	if shapeNames[name] || bareGuarded[name] || name == "hooks" {
		return true
	}
	// The parent's name, without allocating: hot on every create.
	return i >= 6 && p[i-6:i] == "/hooks"
}

// bareLock takes bareMu when p is relevant and returns its release.
func (b *Broker) bareLock(p string) func() {
	if !bareRelevant(p) {
		return func() {}
	}
	b.bare.mu.Lock()
	return b.bare.mu.Unlock
}

func present(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// shaped reports whether dir holds HEAD and either objects and refs or a
// commondir (git then looks for objects and refs, and reads the config
// and hooks, where commondir points).
func shaped(dir int) bool {
	return shapeWith(dir, "")
}

// shapeWith is shaped as it would be with name present too.
func shapeWith(dir int, name string) bool {
	has := func(n string) bool { return n == name || present(dir, n) }
	return has("HEAD") && (has("commondir") || has("objects") && has("refs"))
}

// completes reports whether making name in dir completes the shape: name
// is absent and the shape holds with it (replacing a HEAD, as git does on
// every symref update, changes no shape).
func completes(dir int, name string) bool {
	if !shapeNames[name] && name != "commondir" || present(dir, name) {
		return false
	}
	return !shaped(dir) && shapeWith(dir, name)
}

// bareMake decides a name the command makes at l (a file, a directory
// when mkdir, a symlink, a link, a rename's target), under bareMu. It
// returns the rule that refuses it, or "".
func (b *Broker) bareMake(c *call, l loc, mkdir bool) string {
	if !shapeNames[l.name] && b.policy.Refuse(l.path) != "" {
		// A name a protect pattern covers (a .git directory's config or
		// hooks) is decided by the pattern and git's model for it.
		return ""
	}
	switch {
	case l.name == "commondir":
		// HEAD and a commondir make a repository whose config and hooks
		// are elsewhere: never made so by the command.
		if present(l.dir, "HEAD") {
			return bareRule + ": a commondir beside HEAD"
		}
	case bareGuarded[l.name]:
		if shaped(l.dir) {
			return bareRule + ": " + l.name + " is git's to write"
		}
	case l.name == "hooks":
		if shaped(l.dir) && !mkdir {
			return bareRule + ": only an empty hooks directory may be made"
		}
	case shapeNames[l.name]:
		if completes(l.dir, l.name) {
			if rule := b.completeShape(l); rule != "" {
				return rule
			}
		}
	}
	return b.bareHook(c, l, mkdir)
}

// bareHook refuses a name in a hooks directory of a shaped directory
// unless it is a new "*.sample" file (a name git never runs).
func (b *Broker) bareHook(c *call, l loc, mkdir bool) string {
	if path.Base(path.Dir(l.path)) != "hooks" {
		return ""
	}
	hooks, err := c.atFull(path.Dir(l.path))
	if err != nil || !shaped(hooks.dir) {
		return ""
	}
	if !mkdir && strings.HasSuffix(l.name, ".sample") && !strings.HasPrefix(l.name, ".") {
		return ""
	}
	return bareRule + ": a hook"
}

// bareWrite decides an open for writing (or a truncate) of the existing
// file at l, under bareMu.
func (b *Broker) bareWrite(c *call, l loc) string {
	if b.policy.Refuse(l.path) != "" {
		return "" // decided by the pattern (see bareMake)
	}
	if bareGuarded[l.name] && shaped(l.dir) {
		return bareRule + ": " + l.name + " is git's to write"
	}
	return b.bareHook(c, l, false)
}

// completeShape decides the call that completes the shape in l.dir (see
// the comment at the top); it rewrites a config it takes.
func (b *Broker) completeShape(l loc) string {
	d := l.dir
	for _, n := range []string{"commondir", "config.worktree"} {
		if present(d, n) {
			return bareRule + ": it holds " + n
		}
	}
	var st unix.Stat_t
	if unix.Fstatat(d, "hooks", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return bareRule + ": its hooks is no directory"
		}
		names, err := dirNames(d, "hooks")
		if err != nil {
			return bareRule + ": its hooks cannot be read"
		}
		for _, n := range names {
			if !strings.HasSuffix(n, ".sample") || strings.HasPrefix(n, ".") {
				return bareRule + ": it holds the hook " + n
			}
		}
	}
	err := unix.Fstatat(d, "config", &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == unix.ENOENT:
		return ""
	case err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
		return bareRule + ": its config is no regular file"
	}
	cfg := loc{dir: d, name: "config", path: path.Join(path.Dir(l.path), "config")}
	if b.policy.Refuse(cfg.path) != "" {
		// A config a protect pattern covers (a .git directory's) is never
		// written by the command: the broker's own is taken as it is, the
		// host's is never rewritten.
		if b.git.wroteIt(st) {
			return ""
		}
		return bareRule + ": its config is protected"
	}
	// Any other config is checked and rewritten, even one the broker
	// wrote: the command may have written it while the shape was
	// incomplete (rm HEAD, write, make HEAD again). One that belongs to
	// another user than the broker writes as (a host file named config
	// the shape was built around) is refused rather than rewritten as
	// someone else's.
	if st.Uid != uint32(unix.Geteuid()) {
		return bareRule + ": its config belongs to another user"
	}
	data, mode, err := readRenamed(cfg, 1<<20)
	if err != nil {
		return bareRule + ": its config cannot be read"
	}
	if err := checkGitConfig(data, cfg.path); err != nil {
		return "protect (git config from the sandbox: " + err.Error() + ")"
	}
	nst, err := writeConfigCopy(cfg, data, mode)
	if err != nil {
		return bareRule + ": its config could not be rewritten"
	}
	b.git.remember(nst)
	return ""
}

// dirNames lists the directory name in dir (not following a symlink).
func dirNames(dir int, name string) ([]string, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return f.Readdirnames(-1)
}

// bareOK decides a name made at l (see bareMake; the caller holds
// bareLock) and records a refusal.
func (b *Broker) bareOK(c *call, op string, l loc, mkdir bool) bool {
	if !bareRelevant(l.path) {
		return true
	}
	if rule := b.bareMake(c, l, mkdir); rule != "" {
		b.deny(op, l.path, rule)
		return false
	}
	return true
}

// bareWriteOK decides a write to the existing file at sandbox path p (see
// bareWrite) and records a refusal.
func (b *Broker) bareWriteOK(c *call, op, p string) bool {
	if !bareRelevant(p) {
		return true
	}
	l, err := c.atFull(p)
	if err != nil {
		return true // no such name: nothing of a repository's to write
	}
	if rule := b.bareWrite(c, l); rule != "" {
		b.deny(op, p, rule)
		return false
	}
	return true
}
