package broker

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// plainCreate reports whether an open with flags of the name at l may be
// tried as a create at once, with no look first (an fstatat each create,
// which only told a new name from an existing one): it creates, the
// policy lets the path be made (the one decision), and nothing else is
// decided on a new name there (a git file or config, or /proc). A name
// that exists is then the create's EEXIST, and decided as before.
func (b *Broker) plainCreate(l loc, flags int) bool {
	return flags&unix.O_CREAT != 0 && flags&unix.O_TMPFILE != unix.O_TMPFILE &&
		!decide.Relevant(l.path) && !gitLinkName(l.path) && !strings.HasPrefix(l.path, "/proc/") &&
		b.policy.Refuse(l.path) == ""
}

// createFirst makes the file at l at once when plainCreate lets it, under
// the shared names lock (see create): again says resolve the path again,
// done that r answers the call (made, or the kernel's error: EEXIST with
// O_EXCL). Neither: the name is looked at and opened as it exists.
func (b *Broker) createFirst(c *call, l loc, flags int, mode uint32) (r result, again, done bool) {
	if !b.plainCreate(l, flags) {
		return result{}, false, false
	}
	b.names.RLock()
	defer b.names.RUnlock()
	r, again, exists := b.makeFile(c, l, flags, mode, false)
	return r, again, !again && !exists
}

// makeFile creates the file at l, decided already, with the caller's
// umask, and checks that l's directory did not move meanwhile (see
// landed): again then, or when a symlink was made there meanwhile
// (ELOOP). exists is EEXIST with no O_EXCL in flags. guarded says a rule
// may guard l's path (a template git made there is remembered); false
// when the decision just made found none, which it is not asked again.
func (b *Broker) makeFile(c *call, l loc, flags int, mode uint32, guarded bool) (r result, again, exists bool) {
	c.applyUmask()
	fd, err := unix.Openat(l.dir, l.name, flags|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err == unix.EEXIST && flags&unix.O_EXCL == 0 {
		return result{}, false, true
	}
	if err == unix.ELOOP {
		return result{}, true, false
	}
	if err != nil {
		return fail(err), false, false
	}
	if testHookCreated != nil {
		testHookCreated()
	}
	if c.moved(l) { // see landed
		result{fd: fd, created: &l}.uncreate()
		unix.Close(fd)
		return result{}, true, false
	}
	if guarded {
		b.rememberGuarded(l.path, fd, "")
	}
	return result{fd: fd, cloexec: flags&unix.O_CLOEXEC != 0, created: &l}, false, false
}

// testHookCreated, set by a test, runs when makeFile made its file, before
// it checks that the directory did not move.
var testHookCreated func()
