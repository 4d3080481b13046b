package broker

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The broker creates with the caller's umask. Reading it from
// /proc/PID/status (an open, a read of a page the kernel formats from a
// dozen sources, a close) was the dearest part of a create. So each
// thread's umask is read once and kept, with a pidfd of that thread:
//
//   - a umask only changes by umask(2), which the filter notifies too: the
//     broker lets it continue in the kernel (it has no pointer to re-read)
//     and forgets every kept value (another thread or process may share
//     the caller's fs_struct, CLONE_FS);
//   - until the thread that called umask(2) is back from it (it makes its
//     next notified call, or it exits), nothing is kept or used for a
//     thread that shares its fs_struct (kcmp KCMP_FS; every thread when
//     the kernel cannot tell): a status read meanwhile could still see
//     the old value;
//   - a kept value whose thread has exited (its pidfd polls readable) is
//     read again: its tid may be another thread's now;
//   - once a thread is made without CLONE_FS (its own umask: when it execs
//     from a non-leader thread it takes over its leader's tid), nothing is
//     kept (umasks.split; see cwd_linux.go).
type umasks struct {
	mu  sync.Mutex
	gen uint64
	// noMask keeps no umask (a thread without CLONE_FS was made:
	// umasks.split).
	noMask bool
	m      map[int]umaskEntry // by tid
	wait   map[int]int        // the threads in umask(2): tid -> pidfd
	// waiting is len(wait), read without mu by every call (see settle).
	waiting atomic.Int32
}

type umaskEntry struct {
	pidfd int
	mask  int
	gen   uint64
}

// close releases e's descriptor.
func (e umaskEntry) close() {
	unix.Close(e.pidfd)
}

// maxUmasks bounds the kept values (a pidfd each): all are dropped when
// it is full.
const maxUmasks = 512

// changing records that thread tid is calling umask(2): every kept value
// is dropped, and none is kept until tid is back (settle) or gone.
func (u *umasks) changing(tid int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.gen++
	u.dropAll()
	if u.wait == nil {
		u.wait = map[int]int{}
	}
	if _, ok := u.wait[tid]; ok {
		return
	}
	pfd, err := openThreadPidfd(tid)
	if err != nil {
		pfd = -1 // kept until every other waiter is gone; see settle
	}
	u.wait[tid] = pfd
	u.waiting.Store(int32(len(u.wait)))
}

// settle is called for each notification of thread tid: any umask(2) it
// made before has returned.
func (u *umasks) settle(tid int) {
	if u.waiting.Load() == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.forgetWait(tid)
}

// forgetWait drops tid from the waiters (under mu).
func (u *umasks) forgetWait(tid int) {
	if pfd, ok := u.wait[tid]; ok {
		if pfd >= 0 {
			unix.Close(pfd)
		}
		delete(u.wait, tid)
		u.waiting.Store(int32(len(u.wait)))
	}
}

// dropAll forgets every kept value (under mu).
func (u *umasks) dropAll() {
	for tid, e := range u.m {
		e.close()
		delete(u.m, tid)
	}
}

// closeAll releases every pidfd (Stop).
func (u *umasks) closeAll() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.dropAll()
	for tid := range u.wait {
		u.forgetWait(tid)
	}
}

// cached returns tid's kept umask, or ok false and the generation a value
// read now would be kept under (keep false: read it, keep nothing).
func (u *umasks) cached(tid int) (mask int, ok bool, gen uint64, keep bool) {
	return u.cachedSeen(tid, nil)
}

// cachedSeen is cached; *seen says tid's entry was found current already
// in this call (its pidfd polled: one poll a call is enough, the caller
// is alive throughout), and is set when it is found so now.
func (u *umasks) cachedSeen(tid int, seen *bool) (mask int, ok bool, gen uint64, keep bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	e, hit, keep := u.current(tid, seen)
	if !keep || u.noMask {
		return 0, false, 0, false
	}
	if hit {
		return e.mask, true, 0, false
	}
	return 0, false, u.gen, true
}

// current returns tid's entry when it may be used: no umask(2) since it
// was kept, and its thread has not exited (under mu; see cachedSeen for
// seen, which may be nil). keep false: a umask(2) is under way, nothing
// may be kept or used.
func (u *umasks) current(tid int, seen *bool) (e umaskEntry, hit, keep bool) {
	for w, pfd := range u.wait {
		if w != tid && pfd >= 0 && exited(pfd) {
			u.forgetWait(w)
		}
	}
	if u.heldBack(tid) {
		return umaskEntry{}, false, false
	}
	e, hit = u.m[tid]
	if !hit {
		return umaskEntry{}, false, true
	}
	if e.gen == u.gen && (seen != nil && *seen || !exited(e.pidfd)) {
		if seen != nil {
			*seen = true
		}
		return e, true, true
	}
	e.close()
	delete(u.m, tid)
	return umaskEntry{}, false, true
}

// store keeps mask for tid (whose pidfd is pfd, which u now owns) if no
// umask(2) came since gen was handed out.
func (u *umasks) store(tid, pfd, mask int, gen uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if gen != u.gen || u.heldBack(tid) || u.noMask {
		unix.Close(pfd)
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
	u.m[tid] = umaskEntry{pidfd: pfd, mask: mask, gen: gen}
}

// openThreadPidfd opens a pidfd of thread tid (PIDFD_THREAD, Linux 6.9;
// before it, of a process's leader only).
func openThreadPidfd(tid int) (int, error) {
	pfd, err := unix.PidfdOpen(tid, pidfdThread)
	if err != nil {
		pfd, err = unix.PidfdOpen(tid, 0)
	}
	return pfd, err
}

// heldBack reports whether a umask(2) under way may change tid's umask:
// one made by tid itself, or by a thread that shares its fs_struct (under
// mu). Nothing may be kept or used for tid then.
func (u *umasks) heldBack(tid int) bool {
	for w := range u.wait {
		if w == tid || sharesFS(tid, w) {
			return true
		}
	}
	return false
}

// kcmpFS is KCMP_FS (linux/kcmp.h).
const kcmpFS = 3

// sharesFS reports whether threads a and b share their fs_struct (umask,
// working directory: CLONE_FS), so that a umask(2) of b changes a's too.
// Only such threads are held back by b's call under way: a shell that
// changed its umask and waits for its children would otherwise keep every
// child from having its umask kept. When the kernel cannot
// tell (kcmp refused or missing), they count as sharing.
func sharesFS(a, b int) bool {
	r, _, e := unix.RawSyscall6(unix.SYS_KCMP, uintptr(a), uintptr(b), kcmpFS, 0, 0, 0)
	return e != 0 || r == 0
}

// exited reports whether the thread of pidfd pfd has exited.
func exited(pfd int) bool {
	p := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err != nil || n > 0
}

// umask returns the caller's umask, which the broker applies to what it
// creates for it: kept from an earlier call of the same thread, or read
// from /proc/PID/status (see umasks).
func (c *call) umask() int {
	u := &c.b.umasks
	mask, hit, gen, keep := u.cachedSeen(c.pid, &c.fsSeen)
	if hit {
		return mask
	}
	pfd := -1
	if keep {
		if fd, err := openThreadPidfd(c.pid); err == nil {
			pfd = fd
		}
	}
	mask = readUmask(c.pid)
	// The pidfd and the status are the caller's only if its notification
	// is still pending (its tid not yet reused).
	if pfd >= 0 && c.live() == nil {
		u.store(c.pid, pfd, mask, gen)
	} else if pfd >= 0 {
		unix.Close(pfd)
	}
	return mask
}

// applyUmask sets the worker thread's umask to the caller's (the thread's
// own, unshared: see worker), unless it is that already.
func (c *call) applyUmask() {
	m := c.umask()
	if c.threadUmask != nil && *c.threadUmask == m {
		return
	}
	unix.Umask(m)
	if c.threadUmask != nil {
		*c.threadUmask = m
	}
}

// readUmask reads the umask of thread pid from /proc/PID/status (0o022
// when it cannot).
func readUmask(pid int) int {
	data, err := readFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0o022
	}
	i := bytes.Index(data, []byte("Umask:\t"))
	if i < 0 {
		return 0o022
	}
	f := bytes.Fields(data[i+7:])
	if len(f) == 0 {
		return 0o022
	}
	v, err := strconv.ParseUint(string(f[0]), 8, 32)
	if err != nil {
		return 0o022
	}
	return int(v)
}
