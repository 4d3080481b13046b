package session

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// pipe returns a pipe whose read end is cordon's (through Go's poller)
// and whose write end is a plain blocking descriptor for the sandbox.
func pipe() (*os.File, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	if err := unix.SetNonblock(p[0], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	return os.NewFile(uintptr(p[0]), "|0"), p[1], nil
}

// pipeToSandbox returns a pipe whose read end is a plain blocking
// descriptor for the sandbox and whose write end is cordon's.
func pipeToSandbox() (int, *os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, err
	}
	if err := unix.SetNonblock(p[1], true); err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return -1, nil, err
	}
	return p[0], os.NewFile(uintptr(p[1]), "|1"), nil
}

// isDevNull reports whether r is a file open on /dev/null: the command can
// then get cordon's own /dev/null instead of a pipe and a copier.
func isDevNull(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3
}

// copyStdin copies src into w until src ends or the returned stop is
// called; w is closed either way (when closeW). A file (a client's stdin)
// is polled, so stop never leaves a goroutine blocked in a read of a
// terminal. stop also fails a write to w that blocks: it is called once
// the command's tree is dead, and a process outside the tree that holds
// the read end (a detached exec's server, sent the descriptor) and reads
// nothing must hold neither the exec nor a goroutine.
func copyStdin(w *os.File, src io.Reader, closeW bool) (stop func()) {
	return copyStdinKeys(w, src, closeW, nil)
}

// copyStdinKeys is copyStdin that reports, when keys is not nil, each ^C
// of src that w, a terminal's master, turns into SIGINT (as CopyKeys).
func copyStdinKeys(w *os.File, src io.Reader, closeW bool, keys chan<- struct{}) (stop func()) {
	note := func(p []byte) {
		if keys == nil {
			return
		}
		for i := 0; i < runner.Interrupts(w, p); i++ {
			select {
			case keys <- struct{}{}:
			default:
			}
		}
	}
	closeDst := func() {
		if closeW {
			w.Close()
		}
	}
	// w is non-blocking (Go's poller), so a deadline ends a blocked write.
	unblock := func() { _ = w.SetWriteDeadline(time.Now()) }
	f, ok := src.(*os.File)
	if !ok {
		// A reader may block in Read, which nothing can interrupt: the
		// goroutine then ends at its next write, which fails.
		go func() { _, _ = io.Copy(w, keyReader{src, note}); closeDst() }()
		var once sync.Once
		return func() { once.Do(unblock) }
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		closeDst()
		return func() {}
	}
	// The raw descriptor, without Fd(): that would clear O_NONBLOCK on a
	// description the client shares with its own caller.
	in := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { in = int(fd) })
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer closeDst()
		defer pr.Close()
		buf := make([]byte, 32<<10)
		fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}, {Fd: int32(pr.Fd()), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			if fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents == 0 {
				continue
			}
			n, err := unix.Read(in, buf)
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			if n <= 0 || err != nil {
				return
			}
			note(buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { pw.Close(); unblock(); <-done })
	}
}

// keyReader is r whose reads are shown to note first.
type keyReader struct {
	r    io.Reader
	note func([]byte)
}

func (k keyReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	k.note(p[:n])
	return n, err
}
