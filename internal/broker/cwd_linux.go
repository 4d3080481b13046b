package broker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// A relative path starts at the caller's working directory, whose sandbox
// path the broker read from /proc/TID/cwd for every such call: a readlink
// of about 3.5 µs on this kind of host, a sixth of a brokered create. The
// directory is kept instead (an O_PATH descriptor of the kernel's, opened
// through /proc/TID/cwd), with the umask, in the thread's entry of umasks
// (both belong to the thread's fs_struct, and change by calls the filter
// notifies); its path is read per call from the broker's own descriptor
// table (one component to look up), so a working directory that the
// host, another sandbox on the same workspace or this broker renamed is
// found at its new path, and one removed gives ENOENT, as the kernel's
// own relative resolution would (TestIntegrationBrokerCwdMovedByHost):
//
//   - chdir(2) and fchdir(2) are notified and continue in the kernel, as
//     umask(2) does (they name a directory the kernel resolves; nothing
//     is decided on them): each drops every kept value, and none is kept
//     until the thread that made it is back or gone (umasks.changing);
//   - every rename and directory removal the broker performs counts
//     (cwdGen): a working directory opened before one is opened again;
//   - a kept value whose thread has exited is read again (its pidfd).
//
// The path read is only where the resolution starts: the parent is still
// opened by openat2 in the sandbox's root and decided at the path the
// kernel gives for what was opened, so every decision is made on the
// place that is written. What is left is the race the readlink of
// /proc/TID/cwd had too: a rename of the directory between the read of
// its path and the open of the parent.
//
// A working directory is kept only under a Policy that says the filter
// lets every change of one reach the broker (CwdPolicy), and without
// strict_deny. A thread made without CLONE_FS (a raw clone; pthreads share
// it) has its own working directory and umask, and when it execs from a
// non-leader thread it takes over its leader's tid: the leader's kept
// values would be used for it (a relative create landed in the leader's
// directory). So the filter notifies such a clone (watchClone), and from
// then on the broker keeps nothing, working directory or umask, for the
// rest of the run (TestIntegrationBrokerCwdRawThreadExec).

// CwdPolicy is a Policy that says whether the broker may keep working
// directories (see cwd_linux.go): its filter notifies every clone that
// makes a thread without CLONE_FS, its profile refuses every other call
// that changes a working directory unnotified (unshare, setns,
// pivot_root, a clone with a namespace flag), and strict_deny is off. A
// Policy that is not one keeps none.
type CwdPolicy interface {
	Policy
	// KeepCwd reports whether working directories may be kept.
	KeepCwd() bool
}

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
// makes a thread without CLONE_FS: nothing is kept from then on (see
// cwd_linux.go). The call continues in the kernel: its flags are in a
// register, which no other thread can change.
func watchClone(b *Broker, _ *call, a [6]uint64) result {
	if a[0]&unix.CLONE_THREAD != 0 && a[0]&unix.CLONE_FS == 0 {
		b.umasks.split()
	}
	return result{fd: -1, cont: true}
}

// split records that a thread with its own working directory and umask
// may exist: every kept value is dropped and none is kept again.
func (u *umasks) split() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.dropAll()
	u.noCwd, u.noMask = true, true
}

// cwdRead is a working directory opened for a call, kept once the call
// is known to be still pending (keepCwd).
type cwdRead struct {
	fd          int // O_PATH, of the kernel's working directory, plus one; 0: none
	pfd         int // a pidfd of the caller's thread, opened before the read, plus one; 0: none
	gen, cwdGen uint64
}

// cwd returns the sandbox path of the caller's working directory: the
// path now of the directory kept from an earlier call of the same thread
// (an O_PATH descriptor, so a rename by the host, another sandbox or
// this broker is seen, and a removed one is ENOENT, as the kernel's
// relative resolution starts there), or read through /proc/TID/cwd.
func (c *call) cwd() (string, error) {
	u := &c.b.umasks
	u.mu.Lock()
	e, hit, keep := u.current(c.pid, &c.fsSeen)
	gen, cwdGen, noCwd := u.gen, u.cwdGen, u.noCwd
	if hit && e.cwdFD > 0 && e.cwdGen == cwdGen && !noCwd {
		// Read under mu: the descriptor is not closed meanwhile.
		p, err := fdPath(e.cwdFD - 1)
		u.mu.Unlock()
		return p, err
	}
	u.mu.Unlock()
	link := "/proc/" + strconv.Itoa(c.pid) + "/cwd"
	if !keep || noCwd {
		return linkPath(link)
	}
	// Both opened before the path is read: the pidfd (none when the
	// thread's entry holds one) and the directory are the caller's once
	// the call is found still pending.
	pfd := -1
	if !hit {
		fd, err := openThreadPidfd(c.pid)
		if err != nil {
			return linkPath(link)
		}
		pfd = fd
	}
	fd, err := unix.Open(link, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		var p string
		if p, err = fdPath(fd); err == nil {
			c.cwdRead = cwdRead{fd: fd + 1, pfd: pfd + 1, gen: gen, cwdGen: cwdGen}
			return p, nil
		}
		unix.Close(fd)
	}
	if pfd >= 0 {
		unix.Close(pfd)
	}
	return linkPath(link)
}

// keepCwd keeps the working directory opened for this call, now that the
// call is known to be still pending (it was the caller's).
func (c *call) keepCwd() {
	r := c.cwdRead
	if r.fd == 0 {
		return
	}
	c.cwdRead = cwdRead{}
	c.b.umasks.storeCwd(c.pid, r.pfd-1, r.fd-1, r.gen, r.cwdGen)
}

// dropCwdRead closes the descriptors of a working directory opened and
// not kept.
func (c *call) dropCwdRead() {
	if c.cwdRead.fd > 0 {
		unix.Close(c.cwdRead.fd - 1)
	}
	if c.cwdRead.pfd > 0 {
		unix.Close(c.cwdRead.pfd - 1)
	}
	c.cwdRead = cwdRead{}
}

// storeCwd keeps the working directory descriptor dir for tid, whose
// pidfd is pfd, if no umask(2), chdir, rename or directory removal came
// since gen and cwdGen were handed out (pfd -1: tid's entry holds one).
// u owns both descriptors.
func (u *umasks) storeCwd(tid, pfd, dir int, gen, cwdGen uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	closePfd := func() {
		if pfd >= 0 {
			unix.Close(pfd)
		}
	}
	if gen != u.gen || cwdGen != u.cwdGen || u.heldBack(tid) || u.noCwd {
		closePfd()
		unix.Close(dir)
		return
	}
	if e, ok := u.m[tid]; ok && e.gen == gen {
		closePfd()
		if e.cwdFD > 0 {
			unix.Close(e.cwdFD - 1)
		}
		e.cwdFD, e.cwdGen = dir+1, cwdGen
		u.m[tid] = e
		return
	}
	if pfd < 0 {
		unix.Close(dir)
		return
	}
	if u.m == nil || len(u.m) >= maxUmasks {
		u.dropAll()
		if u.m == nil {
			u.m = map[int]umaskEntry{}
		}
	}
	if old, ok := u.m[tid]; ok {
		old.close()
	}
	u.m[tid] = umaskEntry{pidfd: pfd, mask: -1, gen: gen, cwdFD: dir + 1, cwdGen: cwdGen}
}

// moved counts a rename or directory removal the broker performed: every
// kept working directory is read again.
func (u *umasks) moved() {
	u.mu.Lock()
	u.cwdGen++
	u.mu.Unlock()
}

// movesDirs reports whether the brokered call name with args a may rename or remove a
// directory (see umasks.moved).
func movesDirs(name string, a [6]uint64) bool {
	switch name {
	case "rename", "renameat", "renameat2", "rmdir":
		return true
	case "unlinkat":
		return int(int32(a[2]))&unix.AT_REMOVEDIR != 0
	}
	return false
}

// watchChdir is the broker of chdir(2) and fchdir(2): only watched, as
// umask(2) is (see cwd_linux.go); the call continues in the kernel.
func watchChdir(b *Broker, c *call, _ [6]uint64) result {
	b.umasks.changing(c.pid)
	return result{fd: -1, cont: true}
}
