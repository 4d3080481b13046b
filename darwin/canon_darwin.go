//go:build darwin

package darwin

import (
	"bytes"
	"sync"
	"syscall"
	"unsafe"
)

// getpathBuf is F_GETPATH's output buffer (MAXPATHLEN bytes). It is a
// package variable so that it lives on the heap and cannot move while the
// kernel writes to it; getpathMu serializes its use.
var (
	getpathMu  sync.Mutex
	getpathBuf [1024]byte
)

// realPath returns the path the kernel reports for an existing file: with
// symbolic links resolved and with the case and Unicode form stored on disk,
// which is the spelling Seatbelt matches rules against. A file that cannot
// be opened falls back to filepath.EvalSymlinks.
func realPath(p string) (string, error) {
	// O_EVTONLY opens without needing read permission; O_NONBLOCK keeps a
	// FIFO from blocking.
	const oEvtOnly = 0x8000
	fd, err := syscall.Open(p, oEvtOnly|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return evalSymlinks(p)
	}
	defer syscall.Close(fd)
	getpathMu.Lock()
	defer getpathMu.Unlock()
	getpathBuf = [1024]byte{}
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETPATH, uintptr(unsafe.Pointer(&getpathBuf[0])))
	if errno != 0 {
		return evalSymlinks(p)
	}
	n := bytes.IndexByte(getpathBuf[:], 0)
	if n <= 0 {
		return evalSymlinks(p)
	}
	return string(getpathBuf[:n]), nil
}
