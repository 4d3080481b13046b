//go:build linux || darwin

package runner

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// CopyKeys copies the caller's keystrokes from in to term, the master of
// the command's terminal, until in ends or term fails. Each ^C among them
// that the terminal turns into SIGINT (its ISIG flag on and the byte its
// VINTR character, as the command left them) is reported on keys, without
// ever blocking the copy.
func CopyKeys(term *os.File, in io.Reader, keys chan<- struct{}) {
	buf := make([]byte, 4096)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			for i := 0; i < Interrupts(term, buf[:n]); i++ {
				select {
				case keys <- struct{}{}:
				default:
				}
			}
			if _, werr := term.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Interrupts counts the bytes of p that term's line discipline turns into
// SIGINT.
func Interrupts(term *os.File, p []byte) int {
	rc, err := term.SyscallConn()
	if err != nil {
		return 0
	}
	var t *unix.Termios
	_ = rc.Control(func(fd uintptr) { t, err = unix.IoctlGetTermios(int(fd), ioctlGetTermios) })
	if err != nil || t == nil || t.Lflag&unix.ISIG == 0 {
		return 0
	}
	intr := t.Cc[unix.VINTR]
	if intr == 0 || intr == 0xff { // _POSIX_VDISABLE
		return 0
	}
	return bytes.Count(p, []byte{intr})
}
