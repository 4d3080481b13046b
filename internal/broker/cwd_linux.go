package broker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// A relative path starts at the caller's working directory, whose sandbox
// path the broker reads from /proc/TID/cwd for every such call: the
// kernel's directory at that moment, so a working directory that the host,
// another sandbox on the same workspace or this broker renamed is found at
// its new path, and one removed gives ENOENT, as the kernel's own relative
// resolution would (TestIntegrationBrokerCwdMovedByHost). The path read is
// only where the resolution starts: the parent is still opened by openat2
// in the sandbox's root and decided at the path the kernel gives for what
// was opened, so every decision is made on the place that is written.
// What is left is a rename of the directory between the read of its path
// and the open of the parent, a race the caller's own relative resolution
// has with that rename too.
//
// The directory was kept for a while (an O_PATH descriptor per thread,
// with its umask, its path read per call through /proc/self/fd): that read
// cost what the readlink of /proc/TID/cwd does (one readlinkat either way),
// and keeping it cost more than it saved: chdir(2) and fchdir(2) notified
// (a round trip each), the directories opened again after every rename the
// broker made, and a kcmp and a poll on every call while a chdir of a
// thread sharing no fs_struct with the caller was under way (git clone has
// such a waiting parent for its whole run). See docs/performance.md,
// "Cheaper calls".
//
// The umask is still kept (umask_linux.go). A thread made without
// CLONE_FS (a raw clone; pthreads share it) has its own umask, and when it
// execs from a non-leader thread it takes over its leader's tid: the
// leader's kept umask would be used for it. So the filter notifies such a
// clone (watchClone), and from then on the broker keeps no umask for the
// rest of the run (TestIntegrationBrokerCwdRawThreadExec,
// TestBrokerCloneWatched).

// watched are calls the filter notifies that the broker only watches and
// that Syscalls does not name (the runner writes their rules itself).
var watched = map[int32]sysc{
	unix.SYS_CLONE: {"clone", watchClone},
}

// lookupCall returns the brokered or watched call nr.
func lookupCall(nr int32) (sysc, bool) {
	if sc, ok := calls[nr]; ok {
		return sc, true
	}
	sc, ok := watched[nr]
	return sc, ok
}

// watchClone is the broker of clone(2), which the filter notifies when it
// makes a thread without CLONE_FS: no umask is kept from then on (see
// cwd_linux.go). The call continues in the kernel: its flags are in a
// register, which no other thread can change.
func watchClone(b *Broker, _ *call, a [6]uint64) result {
	if a[0]&unix.CLONE_THREAD != 0 && a[0]&unix.CLONE_FS == 0 {
		b.umasks.split()
	}
	return result{fd: -1, cont: true}
}

// split records that a thread with its own umask may exist: every kept
// value is dropped and none is kept again.
func (u *umasks) split() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.dropAll()
	u.noMask = true
}

// cwd returns the sandbox path of the caller's working directory, read
// through /proc/TID/cwd (one readlinkat from the broker's /proc: see
// procDir).
func (c *call) cwd() (string, error) {
	dir, err := procDir()
	if err != nil {
		return linkPath("/proc/" + strconv.Itoa(c.pid) + "/cwd")
	}
	return readlinkPath(dir, strconv.Itoa(c.pid)+"/cwd")
}
