package decide

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/mounts/xlock"
)

// lockMu serializes, in this process, every decision the shape rules make
// and the call each one decides: the broker's (of every sandbox this
// process serves) and the file tools'.
var lockMu sync.Mutex

// ErrBusy is the error of Locks.Add when another process (a sandbox or a
// cordon on the same workspace, or a command holding the directory's lock
// on purpose) held the directory's lock longer than xlock.Wait: the call
// it decides must fail, never go ahead unlocked.
var ErrBusy = xlock.ErrBusy

// Locks is what one writer's call holds while the shape rules decide it
// and it acts: this process's mutex (taken by Lock) and, across processes,
// the lock of each directory it decides on (Add), each once. A writer
// holds them from a decision by Make, Write or ReplaceConfig until the
// call it decided (and a Rewrite) is done, so that no other call, of this
// process or of another writer on the same workspace (several sandboxes,
// a sandbox and the file tools), completes a shape in between.
//
// The zero Locks holds nothing and takes no mutex: a broker's rename,
// which locks the directories it moves whatever their names, uses it.
type Locks struct {
	mu      bool
	held    [][2]uint64
	unlocks []func()
}

// Lock takes this process's mutex of the shape rules and returns the
// Locks the call adds its directories to (Add); Release lets go of all.
func Lock() *Locks {
	lockMu.Lock()
	return &Locks{mu: true}
}

// Held reports whether the directory d is held already (d an FD).
func (l *Locks) Held(d Dir) bool {
	k, err := key(d)
	return err == nil && l.has(k)
}

func (l *Locks) has(k [2]uint64) bool {
	for _, h := range l.held {
		if h == k {
			return true
		}
	}
	return false
}

func key(d Dir) ([2]uint64, error) {
	e, err := d.Lstat(".")
	if err != nil {
		return [2]uint64{}, err
	}
	return [2]uint64{e.Dev, e.Ino}, nil
}

// Add takes the cross-process lock (mounts/xlock: flock(2) on the
// directory's inode, waited for at most xlock.Wait) of d, a directory
// the writer holds (an FD), unless the call holds it already: a second
// lock of one inode by this process would wait for itself. It fails
// (wrapping ErrBusy when the lock stayed taken) and holds nothing more
// then; the call must be refused. A writer that has taken a lock reads
// the directory's place again before it decides (the directory may have
// moved before the lock was taken).
func (l *Locks) Add(d Dir) error {
	fd, ok := d.(FD)
	if !ok {
		return fmt.Errorf("decide: a %T cannot be locked: %w", d, ErrUnsupported)
	}
	k, err := key(d)
	if err != nil {
		return fmt.Errorf("lock the directory: %w", err)
	}
	if l.has(k) {
		return nil
	}
	unlock, err := xlock.Lock(fd.Dirfd)
	if err != nil {
		return fmt.Errorf("lock the directory: %w", err)
	}
	l.held = append(l.held, k)
	l.unlocks = append(l.unlocks, unlock)
	return nil
}

// Count is the number of directories l holds.
func (l *Locks) Count() int { return len(l.unlocks) }

// Release lets go of every directory's lock, the last taken first, then
// of the mutex. It may be called more than once.
func (l *Locks) Release() {
	for i := len(l.unlocks) - 1; i >= 0; i-- {
		l.unlocks[i]()
	}
	l.unlocks, l.held = nil, nil
	if l.mu {
		l.mu = false
		lockMu.Unlock()
	}
}

// InHooks reports whether the sandbox path p names something in a
// directory named hooks (folding case, as Relevant does): the shape such
// a name may change is that of the directory holding hooks.
func InHooks(p string) bool {
	i := strings.LastIndexByte(p, '/')
	return i >= 6 && strings.EqualFold(p[i-6:i], "/hooks")
}

// ShapeDir is the directory whose shape (and config) a name made,
// removed or written at the sandbox path p in d may change, and so the
// one a writer locks (Locks.Add) before it decides on p: d itself, or for
// a name in a hooks directory, d's parent. All of a shape's pieces are
// names in that one directory, so deciding and acting under its lock is
// deciding on what is there.
func ShapeDir(d Dir, p string) (Dir, error) {
	if InHooks(p) {
		return d.Parent()
	}
	return d, nil
}
