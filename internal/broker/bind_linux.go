package broker

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bind(2) of a unix socket to a path creates a socket file: it is decided
// like any create, on the name resolved in the sandbox's view, and
// performed by the broker on the caller's own socket (pidfd_getfd), bound
// to that name in the directory the broker resolved (the worker's working
// directory is its own: CLONE_FS is unshared). The socket's address is
// then the bare name (getsockname shows "NAME" where the caller gave
// "dir/NAME" or "/abs/dir/NAME"): the broker cannot bind to the caller's
// string without resolving it again in its own view. Every other bind (an
// abstract unix name, autobind, any other family) is performed as given,
// on the broker's copy of the address, so the caller cannot change it into
// a path after the check.

// sockaddrMax is sizeof(struct sockaddr_storage).
const sockaddrMax = 128

// takeFD duplicates the caller's descriptor fd into the broker: the very
// open file (a socket stays that socket).
func (c *call) takeFD(fd int32) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	pfd, err := unix.PidfdOpen(c.pid, pidfdThread)
	if err != nil {
		// Before Linux 6.9 only a process (its leader) has a pidfd; the
		// threads share its descriptors.
		if pfd, err = unix.PidfdOpen(c.pid, 0); err != nil {
			return -1, unix.EBADF
		}
	}
	// The pidfd is the caller's only while its call is pending (its pid
	// is not reused before): checked before a descriptor is taken.
	if err := c.live(); err != nil {
		unix.Close(pfd)
		return -1, err
	}
	nfd, err := unix.PidfdGetfd(pfd, int(fd), 0)
	unix.Close(pfd)
	if err != nil {
		return -1, unix.EBADF
	}
	return c.keep(nfd), nil
}

func rawBind(fd int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(p), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

func (b *Broker) bind(c *call, op string, sockfd int32, addrAddr uint64, addrLen int32) result {
	if addrLen < 0 || addrLen > sockaddrMax {
		return fail(unix.EINVAL)
	}
	addr, err := c.bytesAt(addrAddr, int(addrLen))
	if err != nil {
		return fail(err)
	}
	sock, err := c.takeFD(sockfd)
	if err != nil {
		return fail(err)
	}
	if len(addr) <= 2 || binary.LittleEndian.Uint16(addr) != unix.AF_UNIX || addr[2] == 0 {
		return errResult(rawBind(sock, addr))
	}
	name := addr[2:]
	for i, ch := range name {
		if ch == 0 {
			name = name[:i]
			break
		}
	}
	l, err := c.at(unix.AT_FDCWD, string(name))
	if err != nil {
		return fail(err)
	}
	if !b.check(op, l.path) {
		return fail(unix.EACCES)
	}
	if len(l.name) > 107 {
		return fail(unix.EINVAL)
	}
	if err := unix.Fchdir(l.dir); err != nil {
		return fail(err)
	}
	unix.Umask(c.umask())
	sa := make([]byte, 2+len(l.name)+1)
	binary.LittleEndian.PutUint16(sa, unix.AF_UNIX)
	copy(sa[2:], l.name)
	err = rawBind(sock, sa)
	// The worker's working directory pins nothing of the sandbox's.
	_ = unix.Chdir("/")
	return errResult(err)
}
