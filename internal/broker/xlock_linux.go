package broker

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
	"github.com/cordon-run/cordon/mounts/xlock"
)

// Across sandboxes. decide.Lock and the names lock order the calls of one
// broker; several sandboxes on one workspace have one broker each, so the
// stateful rules also take mounts/xlock's lock, flock(2) on a directory,
// which every broker (root or not, whatever its mount root) meets on the
// directory's inode:
//
//   - the shape rule (and the config it checks and rewrites) locks the
//     directory whose shape a name may change: the name's directory, or
//     for a name in a hooks directory the directory holding hooks. All of
//     a shape's pieces are names in that one directory, so deciding and
//     acting under its lock is deciding on what is there. Only names
//     decide.Relevant picks take it: every other call costs nothing more;
//   - a rename of a directory locks the directories it moves from and to
//     and, as its walk goes, every directory of the tree it moves, held
//     until the move is done (up to maxHeldDirs of them; past that each is
//     locked only while it is read). A shape decision or a directory's
//     rename in that tree by another broker waits for the move and is then
//     decided on the tree's new path;
//   - after the move, the tree is walked again where it now is (a file an
//     unlocked call made meanwhile, between the first walk and the move,
//     is seen there), and a tree that now carries a guarded entry is moved
//     back (or aside, when its old name was taken meanwhile) and the call
//     refused;
//   - a call that makes a name without the lock (any name but the shape's)
//     reads its directory's path again once the name is made (landed): if
//     the directory moved meanwhile, after the walk that followed that
//     move, the name is removed again and the call decided anew where it
//     now is. One readlink per such call.
//
// What is left is two windows, both only when a directory is moved under
// a call in flight in another sandbox: a name made unlocked between the
// first walk and the move exists at its new path until the walk after the
// move reaches it and the tree is moved back, and one made after that
// walk exists until its own readlink. Neither can be widened by the
// command beyond a walk of the tree it moves, and what was there is gone
// when the calls return.
//
// A lock is taken after the call's paths were resolved: the directory may
// have moved in between, so each path is read again once its directory is
// locked, and a call whose directory moved is resolved again from the
// start (result.again).
//
// A lock another process holds (a command inside a sandbox may flock a
// directory it can open) is waited for at most xlock.Wait, then the call
// fails with EBUSY and a denial with Rule Busy names the path.

// Busy is the Rule of a call refused because another process held the
// lock of a directory it decides on longer than xlock.Wait (see
// mounts/xlock): the caller gets EBUSY.
const Busy = "busy (another process, a sandbox or a cordon on the same workspace, held this directory's lock too long)"

// maxHeldDirs bounds the directories a rename's walk holds locked (and
// open) until the move is done; the rest are locked only while read.
const maxHeldDirs = 4096

// maxAgain bounds how often a call whose directory moved before its lock
// was taken is resolved again before it fails with EAGAIN.
const maxAgain = 8

// hold is the set of directories one call holds locked, each once (see
// decide.Locks: the file tools take the same locks): a directory it holds
// already is not locked again (a second flock of the same inode by this
// process would wait for itself).
type hold struct {
	b  *Broker
	op string
	// locks holds the decisions' mutex too when the call decides on a
	// shape (bareLock, a rename to a name decide.Relevant picks).
	locks *decide.Locks
}

func (b *Broker) newHold(op string) *hold {
	return &hold{b: b, op: op, locks: &decide.Locks{}}
}

// newShapeHold is newHold holding the decisions' mutex (decide.Lock).
func (b *Broker) newShapeHold(op string) *hold {
	return &hold{b: b, op: op, locks: decide.Lock()}
}

// renameShapes are the names whose shape directories a rename locks.
func renameShapes(from, to loc, exchange bool) []loc {
	if exchange && decide.Relevant(from.path) {
		return []loc{to, from}
	}
	return []loc{to}
}

// lock takes the locks of dirs not held yet, in the order of their device
// and inode (two calls that lock the same directories take them in one
// order). A refusal is recorded for p.
func (h *hold) lock(p string, dirs ...int) bool {
	type one struct {
		k  [2]uint64
		fd int
	}
	var todo []one
	for _, fd := range dirs {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			h.b.deny(h.op, p, "lock (cannot stat the directory: "+err.Error()+")")
			return false
		}
		k := [2]uint64{st.Dev, st.Ino}
		if !slices.ContainsFunc(todo, func(o one) bool { return o.k == k }) {
			todo = append(todo, one{k, fd})
		}
	}
	slices.SortFunc(todo, func(a, b one) int {
		if c := cmp.Compare(a.k[0], b.k[0]); c != 0 {
			return c
		}
		return cmp.Compare(a.k[1], b.k[1])
	})
	for _, o := range todo {
		if err := h.locks.Add(decide.FD{Dirfd: o.fd}); err != nil {
			rule := Busy
			if !errors.Is(err, xlock.ErrBusy) {
				rule = "lock (the directory cannot be locked: " + err.Error() + ")"
			}
			h.b.deny(h.op, p, rule)
			return false
		}
	}
	return true
}

// held reports whether h holds the directory fd already.
func (h *hold) held(fd int) bool { return h.locks.Held(decide.FD{Dirfd: fd}) }

// release lets go of every lock held, the last taken first.
func (h *hold) release() { h.locks.Release() }

// moved reports whether l's directory is no longer at the path l was
// decided on (read again under its lock).
func moved(l loc) bool {
	dir, err := fdPath(l.dir)
	return err != nil || strings.TrimSuffix(dir, "/")+"/"+l.name != l.path
}

// moved is moved(l) with the directory's path read by c.dirPath.
func (c *call) moved(l loc) bool {
	dir, err := c.dirPath(l.dir)
	return err != nil || strings.TrimSuffix(dir, "/")+"/"+l.name != l.path
}

// retry is the answer for a call whose directory moved before its lock
// was taken: handle runs it again from its arguments.
func retry() result { return result{fd: -1, again: true} }

// shapeDir returns the directory whose shape a name at l may change
// (decide.ShapeDir, here reached as l's directory's ".."): l's own, or for
// a name in a hooks directory the one holding hooks.
func shapeDir(c *call, l loc) (int, error) {
	if !decide.InHooks(l.path) {
		return l.dir, nil
	}
	fd, err := unix.Openat(l.dir, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return c.keep(fd), nil
}

// lockShapes adds to h the locks of the shape directories of the names at
// ls (see shapeDir) and checks that none moved; ok false says why in r.
func (h *hold) lockShapes(c *call, ls ...loc) (r result, ok bool) {
	dirs := make([]int, 0, len(ls))
	for _, l := range ls {
		d, err := shapeDir(c, l)
		if err != nil {
			return fail(err), false
		}
		dirs = append(dirs, d)
	}
	if !h.lock(ls[0].path, dirs...) {
		return fail(unix.EBUSY), false
	}
	for _, l := range ls {
		if moved(l) {
			return retry(), false
		}
	}
	return result{}, true
}

// bareLock takes the decisions' mutex and the cross-process lock of l's
// shape directory when the name at l may matter to the shape rules
// (decide.Relevant), and returns their release. When ok is false the call
// answers r: EBUSY (recorded), or resolve again (l's directory moved).
func (b *Broker) bareLock(c *call, op string, l loc) (unlock func(), r result, ok bool) {
	if !decide.Relevant(l.path) {
		return func() {}, result{}, true
	}
	h := b.newShapeHold(op)
	if r, ok := h.lockShapes(c, l); !ok {
		h.release()
		return nil, r, false
	}
	return h.release, result{}, true
}

// landed answers a call that made the name at l (err: how that went).
// When l's directory moved while the call was decided and made it (a
// rename by another broker, which walked the tree before this name was
// there), the name is removed again (moved aside if it cannot be) and
// the call runs again, decided where it is now: the walk after that move
// (see afterMove) sees what was made before it, this sees what was made
// after it.
func landed(err error, l loc, dir bool) result {
	if err != nil {
		return fail(err)
	}
	if !moved(l) {
		return ok(0)
	}
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	if unix.Unlinkat(l.dir, l.name, flags) != nil {
		_ = moveAside(l.dir, l.dir, l.name)
	}
	return retry()
}

// renamed is landed for a rename: moved back when a directory moved.
func renamed(err error, from, to loc, flags uint) result {
	if err != nil {
		return fail(err)
	}
	if !moved(from) && !moved(to) {
		return ok(0)
	}
	_ = undoRename(from, to, flags)
	return retry()
}

// moveAside renames name in dir to a new name in aside's directory.
func moveAside(dir, aside int, name string) error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return unix.Renameat2(dir, name, aside, ".cordon-refused-"+hex.EncodeToString(rnd[:]), unix.RENAME_NOREPLACE)
}

// undoRename moves back what rename(from, to, flags) moved: to its old
// name, or, when that was taken meanwhile, to a new name beside it; when
// neither can be (the old directory was removed meanwhile), to a new name
// where it is, which no rule gives a meaning.
func undoRename(from, to loc, flags uint) error {
	if flags&unix.RENAME_EXCHANGE != 0 {
		if unix.Renameat2(to.dir, to.name, from.dir, from.name, unix.RENAME_EXCHANGE) == nil {
			return nil
		}
	} else if unix.Renameat2(to.dir, to.name, from.dir, from.name, unix.RENAME_NOREPLACE) == nil ||
		moveAside(to.dir, from.dir, to.name) == nil {
		return nil
	}
	return moveAside(to.dir, to.dir, to.name)
}
