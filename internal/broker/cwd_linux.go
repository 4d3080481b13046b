package broker

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// A relative path starts at the caller's working directory, whose sandbox
// path the broker read from /proc/TID/cwd for every such call: a readlink
// of about 3.5 µs on this kind of host, a sixth of a brokered create. The
// path is kept instead, with the umask, in the thread's entry of umasks
// (both belong to the thread's fs_struct, and change by calls the filter
// notifies):
//
//   - chdir(2) and fchdir(2) are notified and continue in the kernel, as
//     umask(2) does (they name a directory the kernel resolves; nothing
//     is decided on them): each drops every kept value, and none is kept
//     until the thread that made it is back or gone (umasks.changing);
//   - every rename and directory removal the broker performs counts
//     (cwdGen): a working directory read before one is read again;
//   - a kept value whose thread has exited is read again (its pidfd).
//
// The kept path is only where the resolution starts: the parent is still
// opened by openat2 in the sandbox's root and decided at the path the
// kernel gives for what was opened, so every decision is made on the
// place that is written. Left, in the default mode: a working directory
// renamed or removed by the host or by another sandbox on the same
// workspace (which this broker does not see) is, for this thread's
// relative paths, still at its old path until the thread's next chdir or
// umask or this broker's next rename or rmdir: such a path is resolved
// from the old path (what is there now, or ENOENT), where the kernel
// would resolve it from the moved directory.
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

// cwdRead is a working directory read for a call, kept once the call is
// known to be still pending (keepCwd).
type cwdRead struct {
	path        string
	pfd         int // a pidfd of the caller's thread, opened before the read; 0: none
	gen, cwdGen uint64
}

// cwd returns the sandbox path of the caller's working directory: kept
// from an earlier call of the same thread, or read from /proc/TID/cwd.
func (c *call) cwd() (string, error) {
	u := &c.b.umasks
	u.mu.Lock()
	e, hit, keep := u.current(c.pid, &c.fsSeen)
	gen, cwdGen, noCwd := u.gen, u.cwdGen, u.noCwd
	u.mu.Unlock()
	if hit && e.cwd != "" && e.cwdGen == cwdGen && !noCwd {
		return e.cwd, nil
	}
	pfd := -1
	if keep && !noCwd && !hit {
		// Opened before the read: the pidfd and the path are both the
		// caller's once the call is found still pending.
		if fd, err := openThreadPidfd(c.pid); err == nil {
			pfd = fd
		}
	}
	p, err := linkPath("/proc/" + strconv.Itoa(c.pid) + "/cwd")
	if err != nil || !keep || noCwd {
		if pfd >= 0 {
			unix.Close(pfd)
		}
		return p, err
	}
	c.cwdRead = cwdRead{path: p, pfd: pfd + 1, gen: gen, cwdGen: cwdGen}
	return p, nil
}

// keepCwd keeps the working directory read for this call, now that the
// call is known to be still pending (the path was the caller's).
func (c *call) keepCwd() {
	r := c.cwdRead
	if r.path == "" {
		return
	}
	c.cwdRead = cwdRead{}
	c.b.umasks.storeCwd(c.pid, r.pfd-1, r.path, r.gen, r.cwdGen)
}

// dropCwdRead closes the pidfd of a working directory read and not kept.
func (c *call) dropCwdRead() {
	if c.cwdRead.pfd > 0 {
		unix.Close(c.cwdRead.pfd - 1)
	}
	c.cwdRead = cwdRead{}
}

// storeCwd keeps cwd for tid, whose pidfd is pfd (-1: tid's entry holds
// one), if no umask(2), chdir, rename or directory removal came since gen
// and cwdGen were handed out. u owns pfd.
func (u *umasks) storeCwd(tid, pfd int, cwd string, gen, cwdGen uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if gen != u.gen || cwdGen != u.cwdGen || u.heldBack(tid) || u.noCwd {
		if pfd >= 0 {
			unix.Close(pfd)
		}
		return
	}
	if e, ok := u.m[tid]; ok && e.gen == gen {
		if pfd >= 0 {
			unix.Close(pfd)
		}
		e.cwd, e.cwdGen = cwd, cwdGen
		u.m[tid] = e
		return
	}
	if pfd < 0 {
		return
	}
	if u.m == nil || len(u.m) >= maxUmasks {
		u.dropAll()
		if u.m == nil {
			u.m = map[int]umaskEntry{}
		}
	}
	if old, ok := u.m[tid]; ok {
		unix.Close(old.pidfd)
	}
	u.m[tid] = umaskEntry{pidfd: pfd, mask: -1, gen: gen, cwd: cwd, cwdGen: cwdGen}
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
