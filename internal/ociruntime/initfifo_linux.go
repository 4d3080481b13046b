package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// libcontainer's init loads the container's filter before it is done: its
// last call under the filter, before it executes the container's command,
// reopens the exec FIFO for writing through its own /proc/thread-self/fd
// (create waits there for start). The broker resolves a path in the
// caller's view but opens /proc's self links as itself, so that open is
// let through in the kernel here, before the broker takes the descriptor:
// it is the init's own call, made before any of the container's code runs
// (the init is alone under this filter, and the command only starts once
// the call has returned). It is checked to be exactly that call: an open
// for writing, by the init, of a /proc fd link.

// seccompNotif and seccompNotifResp are the kernel's struct seccomp_notif
// and struct seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// fifoPath is the init's reopen of its FIFO descriptor, through /proc.
// It is absolute, relative to /proc, or a number relative to the fd
// directory of /proc (a private instance of /proc names it from its root).
// Both are compiled on first use, not at every start of the binary.
var (
	fifoPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(/proc)?/?(thread-self|self|[0-9]+(/task/[0-9]+)?)/fd/[0-9]+$`)
	})
	fdNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+$`) })
)

// nativeArch is the audit arch of this build's calls.
var nativeArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

// passInitFIFO receives the first call on fd, which must be the init's
// (pid) reopen of its exec FIFO, and lets the kernel perform it; with
// refuse set (the network guard could not be attached) it fails the call,
// and so the container, and returns refuse.
func passInitFIFO(fd, pid int, refuse error) error {
	var n seccompNotif
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("wait for the init's first call: %w", err)
		}
		if fds[0].Revents&unix.POLLHUP != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return errors.New("the init ended before its first call")
		}
		n = seccompNotif{}
		if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("receive the init's first call: %w", err)
		}
		break
	}
	resp := seccompNotifResp{ID: n.ID, Error: -int32(unix.EPERM)}
	err := refuse
	if err == nil {
		err = initFIFOCall(n, pid)
	}
	if err != nil {
		_ = ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
		return err
	}
	resp = seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("let the init's FIFO open through: %w", err)
	}
	return nil
}

// initFIFOCall checks that n is the init's open of a /proc fd link for
// writing.
func initFIFOCall(n seccompNotif, pid int) error {
	if int(n.Pid) != pid {
		return fmt.Errorf("the first brokered call came from pid %d, not from the container's init %d", n.Pid, pid)
	}
	pathArg, flagArg := -1, -1
	switch {
	case n.Arch != nativeArch[runtime.GOARCH]:
	case n.Nr == unix.SYS_OPENAT:
		pathArg, flagArg = 1, 2
	case sysOpen >= 0 && n.Nr == int32(sysOpen):
		pathArg, flagArg = 0, 1
	}
	if pathArg < 0 {
		return fmt.Errorf("the init's first brokered call is call %d, not the open of its exec FIFO", n.Nr)
	}
	p, err := readCString(pid, n.Args[pathArg])
	if err != nil {
		return fmt.Errorf("read the path of the init's first call: %w", err)
	}
	if pathArg == 1 && fdNumber().MatchString(p) {
		// openat(the /proc fd directory, "N"): the directory is named
		// by the init's own descriptor table.
		dir, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, int32(n.Args[0])))
		if err != nil {
			return fmt.Errorf("the directory of the init's first call: %w", err)
		}
		p = dir + "/" + p
	}
	if n.Args[flagArg]&unix.O_ACCMODE != unix.O_WRONLY || !fifoPath().MatchString(p) {
		return fmt.Errorf("the init's first brokered call opens %q (flags %#x), not its exec FIFO", p, n.Args[flagArg])
	}
	return nil
}

// readCString reads a NUL-terminated path from pid's memory at addr.
func readCString(pid int, addr uint64) (string, error) {
	buf := make([]byte, 256)
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return "", err
	}
	for i := 0; i < n; i++ {
		if buf[i] == 0 {
			return string(buf[:i]), nil
		}
	}
	return "", errors.New("the path is longer than an exec FIFO's")
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}
