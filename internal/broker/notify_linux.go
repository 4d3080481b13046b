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

// sendFD installs src in the caller as its syscall's result (the lowest
// free descriptor, as open would) and answers the notification at once.
func sendFD(fd int, id uint64, src int, cloexec bool) error {
	a := notifAddfd{ID: id, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(src)}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(&a)))
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
