package broker

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's seccomp user-notification structures (linux/seccomp.h).
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// ioctl makes one ioctl; EINTR is returned to the caller (Stop uses it
// to interrupt a wait).
func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// recv waits for the next notification.
func recv(fd int, n *notif) error {
	*n = notif{}
	return ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(n))
}

// orphaned reports whether the listener's filter has no process left:
// the kernel then signals POLLHUP on it.
func orphaned(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0 && p[0].Revents&unix.POLLHUP != 0
}

// peek reports, after a notification of thread tid was received, whether
// another one is waiting to be received (more), and whether tid's kept
// umask is its own (seen: its entry's pidfd does
// not poll readable; see umasks.current): one poll of both descriptors,
// where a call paid one poll for each. An entry whose thread exited is
// dropped. The pidfd is polled under the entries' lock, so it is not
// closed (and its number reused) meanwhile.
func (b *Broker) peek(tid int) (more, seen bool) {
	u := &b.umasks
	u.mu.Lock()
	defer u.mu.Unlock()
	p := [2]unix.PollFd{{Fd: int32(b.fd), Events: unix.POLLIN}, {Fd: -1}}
	e, kept := u.m[tid]
	kept = kept && e.gen == u.gen
	if kept {
		p[1] = unix.PollFd{Fd: int32(e.pidfd), Events: unix.POLLIN}
	}
	if _, err := unix.Poll(p[:], 0); err != nil {
		return false, false
	}
	if kept && p[1].Revents != 0 {
		e.close()
		delete(u.m, tid)
		kept = false
	}
	return p[0].Revents&unix.POLLIN != 0, kept
}

// valid reports whether the notification is still pending: the caller has
// not died (and its pid been reused) since it was received.
func valid(fd int, id uint64) bool {
	return ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// respond answers the notification with val or, when errno is set, with
// that error. The caller may be gone (ENOENT): nothing to answer then.
func respond(fd int, id uint64, val int64, errno unix.Errno) {
	r := notifResp{ID: id, Val: val}
	if errno != 0 {
		r.Error = -int32(errno)
		r.Val = 0
	}
	_ = ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// respondContinue lets the notified call run in the kernel
// (SECCOMP_USER_NOTIF_FLAG_CONTINUE): only for a call with no pointer the
// kernel would read again after the answer (umask).
func respondContinue(fd int, id uint64) {
	r := notifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	_ = ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&r))
}

// sendFD installs src in the caller as its syscall's result (the lowest
// free descriptor, as open would) and answers the notification at once.
//
// The ioctl waits until the caller has installed the descriptor, and a
// signal must not interrupt that wait: with SECCOMP_ADDFD_FLAG_SEND the
// kernel marks the notification answered before it waits, and withdraws
// the descriptor when the wait is interrupted, so the caller's call
// returned 0 with no descriptor installed (tar wrote its file's contents
// to descriptor 0: "Cannot write: Bad file descriptor"). The Go runtime
// signals a thread (SIGURG) to preempt it at any time, so the thread
// blocks every signal for the ioctl (raw calls: this thread only; a
// signal sent meanwhile is delivered once it is unblocked).
func sendFD(fd int, id uint64, src int, cloexec bool) error {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	all, old := ^uint64(0), uint64(0)
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&all)), uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return e
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
	unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// errnoOf maps err to the errno the caller sees; anything that is not an
// errno becomes EACCES (fail closed).
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return unix.EACCES
}

// setSyncWakeUp asks the kernel (Linux 6.6 and later) to hand each call
// over synchronously (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): the caller
// blocks in its system call anyway, so the receiving worker is woken on
// the caller's CPU and the caller on the worker's when the answer is
// sent, instead of a wake-up of an idle CPU (an inter-processor interrupt,
// costly in a virtual machine) each way. The decision and its checks are
// unchanged; only where the threads run is. An older kernel refuses the
// flag (EINVAL), which leaves the asynchronous hand-over.
func setSyncWakeUp(fd int) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	if e != 0 {
		return e
	}
	return nil
}
