//go:build linux || darwin

package runner

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// maxTypeAhead bounds the reads of what a terminal holds before it is made
// raw: a terminal that hung up answers every read at once.
const maxTypeAhead = 64

// MakeRaw puts the caller's terminal f in raw mode for a TTY run or exec,
// whose command has a terminal of its own that does the line editing, the
// echo and the output processing: no input processing, no echo, no
// signals from keys, and no output processing (OPOST off, so a line the
// command's terminal ends with "\r\n" reaches the screen as that). It
// returns what restores the settings, and the input the terminal already
// held complete in canonical mode, for the command's terminal
// (Request.TypeAhead): the kernel would hand it over on the switch as raw
// bytes, each end-of-file (^D, which a canonical terminal stores as a NUL
// marker) turned into a NUL byte that the command's terminal then echoes
// as "^@". Each end-of-file becomes the terminal's VEOF byte again.
func MakeRaw(f *os.File) (restore func() error, typeAhead []byte, err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal settings: %w", err)
	}
	typeAhead = takeTypeAhead(fd, old)
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &raw); err != nil {
		return nil, typeAhead, fmt.Errorf("raw mode: %w", err)
	}
	return func() error { return unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, typeAhead, nil
}

// takeTypeAhead reads, without waiting, the complete lines and
// end-of-files that the canonical terminal fd holds (a partial line stays:
// it is raw input after the switch, as typed).
func takeTypeAhead(fd int, t *unix.Termios) []byte {
	if t.Lflag&unix.ICANON == 0 {
		return nil
	}
	var out []byte
	buf := make([]byte, 4096)
	for i := 0; i < maxTypeAhead; i++ {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(pfd, 0); err != nil || n == 0 || pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			break
		}
		n, err := unix.Read(fd, buf)
		if err != nil {
			break
		}
		if n == 0 {
			out = append(out, t.Cc[unix.VEOF])
			continue
		}
		out = append(out, buf[:n]...)
	}
	return out
}
