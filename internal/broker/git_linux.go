package broker

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// What git itself needs of guarded paths in a repository the command
// creates (git init, git clone), without giving it a way to plant code:
//
//   - git's templates: the hooks directory, made empty, and "*.sample"
//     files created in it; git never runs a hook by that name, and no
//     other name can be created, renamed or linked there;
//   - a new repository's config: git writes config.lock and renames it
//     over config. The broker reads config.lock, refuses it unless every
//     key is on decide.GitConfig's short list that runs nothing (core.bare,
//     remote.NAME.url, branch.NAME.merge, ...), writes that content to a
//     file of its own, which the command never held open, and renames it
//     over config. Only a config that did not exist when it was first
//     written this way, or that the broker wrote itself, is replaced so;
//     an existing repository's config only in the keys git submodule
//     changes (decide.GitConfigChange), every other line kept.

// gitState remembers the configs the broker wrote (their device and
// inode), so that git may rewrite them during the same run.
type gitState struct {
	mu    sync.Mutex
	wrote map[[2]uint64]bool
}

// gitConfigName reports whether p is a config file git renames a lock
// over.
func gitConfigName(p string) bool {
	return path.Base(p) == "config" && (path.Base(path.Dir(p)) == ".git" || strings.Contains(p, "/.git/modules/"))
}

// renameGitConfig performs rename(from, to) where to is a guarded git
// config: only for a new one or one the broker wrote, only with content
// decide.GitConfig takes, and through a copy the command never held.
func (b *Broker) renameGitConfig(op string, from, to loc) result {
	var st unix.Stat_t
	err := unix.Fstatat(to.dir, to.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	existed := err == nil
	if err != nil && err != unix.ENOENT {
		return fail(err)
	}
	hosts := existed && !b.git.wroteIt(st)
	data, mode, err := readRenamed(from, decide.MaxConfig)
	if err != nil {
		return fail(err)
	}
	if hosts {
		// A config that existed before the broker wrote one (the
		// host's): changed only in the keys git submodule changes,
		// every other line kept.
		old, _, err := readRenamed(to, decide.MaxConfig+1)
		if err == nil && len(old) > decide.MaxConfig {
			err = unix.EFBIG
		}
		if err == nil {
			err = decide.GitConfigChange(old, data, to.path, b.rules())
		}
		if err != nil {
			b.deny(op, to.path, decide.ConfigRule+err.Error()+")")
			return fail(unix.EACCES)
		}
	} else if err := decide.GitConfig(data, to.path, b.rules()); err != nil {
		b.deny(op, to.path, decide.ConfigRule+err.Error()+")")
		return fail(unix.EACCES)
	}
	nst, err := writeConfigCopy(to, data, mode)
	if err != nil {
		return fail(err)
	}
	if hosts {
		// Still the host's: a later change is decided against it again.
		return errResult(unix.Unlinkat(from.dir, from.name, 0))
	}
	if existed {
		b.git.forget(st) // the config it replaced, which the broker wrote
	}
	b.git.remember(nst)
	return errResult(unix.Unlinkat(from.dir, from.name, 0))
}

// writeConfigCopy writes data to a new file of the broker's in to's
// directory, which the command never held, and renames it over to.
func writeConfigCopy(to loc, data []byte, mode uint32) (unix.Stat_t, error) {
	var nst unix.Stat_t
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".cordon-config-" + hex.EncodeToString(rnd[:])
	out, err := unix.Openat(to.dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode&0o644)
	if err != nil {
		return nst, err
	}
	w := os.NewFile(uintptr(out), tmp)
	_, werr := w.Write(data)
	serr := unix.Fstat(out, &nst)
	w.Close()
	if werr != nil || serr != nil {
		_ = unix.Unlinkat(to.dir, tmp, 0)
		return nst, unix.EIO
	}
	if err := unix.Renameat(to.dir, tmp, to.dir, to.name); err != nil {
		_ = unix.Unlinkat(to.dir, tmp, 0)
		return nst, err
	}
	return nst, nil
}

func (g *gitState) wroteIt(st unix.Stat_t) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wrote[[2]uint64{st.Dev, st.Ino}]
}

// wroteEntry is wroteIt for package decide's Entry.
func (g *gitState) wroteEntry(e decide.Entry) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.wrote[[2]uint64{e.Dev, e.Ino}]
}

func (g *gitState) forget(st unix.Stat_t) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.wrote, [2]uint64{st.Dev, st.Ino})
}

func (g *gitState) remember(st unix.Stat_t) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wrote == nil {
		g.wrote = map[[2]uint64]bool{}
	}
	g.wrote[[2]uint64{st.Dev, st.Ino}] = true
}

// rememberGuarded records what the broker just made at p (the file fd, or
// name in the directory fd) when a rule guards p: only git's templates get
// there, and the command may remove them again.
func (b *Broker) rememberGuarded(p string, fd int, name string) {
	if b.policy.Refuse(p) == "" {
		return
	}
	var st unix.Stat_t
	var err error
	if name == "" {
		err = unix.Fstat(fd, &st)
	} else {
		err = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err == nil {
		b.git.remember(st)
	}
}
