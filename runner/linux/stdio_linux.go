package linux

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/console"
)

// stdio wires the command's stdio through pipes cordon owns, so that no
// host descriptor (a terminal in particular, which TIOCSTI could abuse)
// crosses into the sandbox, and so that cordon can stop waiting for input
// the moment the command is gone.
type stdio struct {
	closeAfterStart []io.Closer
	stdinW          *os.File
	copiers         sync.WaitGroup
	console         *os.File
	consoleSock     *os.File
	stdout, stderr  io.Writer
	// keys carries each ^C typed at a TTY run's terminal (CopyKeys).
	keys chan struct{}
}

func newStdio(req runner.Request, lp *libcontainer.Process, stdout, stderr io.Writer) (*stdio, error) {
	s := &stdio{stdout: stdout, stderr: stderr}
	if req.TTY {
		s.keys = make(chan struct{}, 8)
		parent, child, err := console.SocketPair()
		if err != nil {
			return nil, err
		}
		lp.ConsoleSocket = child
		if req.TermSize != nil {
			if c, r, ok := req.TermSize(); ok {
				lp.ConsoleWidth, lp.ConsoleHeight = c, r
			}
		}
		s.consoleSock = parent
		s.closeAfterStart = append(s.closeAfterStart, child)
		return s, nil
	}
	if req.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		lp.Stdin = r
		s.stdinW = w
		s.closeAfterStart = append(s.closeAfterStart, r)
		go func() {
			_, _ = io.Copy(w, req.Stdin)
			w.Close()
		}()
	}
	for _, o := range []struct {
		dst io.Writer
		set func(*os.File)
	}{{stdout, func(f *os.File) { lp.Stdout = f }}, {stderr, func(f *os.File) { lp.Stderr = f }}} {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		o.set(w)
		s.closeAfterStart = append(s.closeAfterStart, w)
		s.copiers.Add(1)
		go func(dst io.Writer) {
			defer s.copiers.Done()
			_, _ = io.Copy(dst, r)
			r.Close()
		}(o.dst)
	}
	return s, nil
}

// started is called once the container runs: it drops cordon's copies of
// the child's ends and, for a TTY, receives the console.
func (s *stdio) started(req runner.Request) error {
	for _, c := range s.closeAfterStart {
		c.Close()
	}
	s.closeAfterStart = nil
	if s.consoleSock == nil {
		return nil
	}
	f, err := console.RecvFile(s.consoleSock)
	s.consoleSock.Close()
	s.consoleSock = nil
	if err != nil {
		return err
	}
	s.console = f
	s.resize(req)
	if len(req.TypeAhead) > 0 {
		if _, err := f.Write(req.TypeAhead); err != nil {
			return fmt.Errorf("console: type-ahead: %w", err)
		}
	}
	if req.Stdin != nil {
		go runner.CopyKeys(f, req.Stdin, s.keys)
	}
	s.copiers.Add(1)
	go func() {
		defer s.copiers.Done()
		_, _ = io.Copy(s.stdout, f)
	}()
	return nil
}

func (s *stdio) resize(req runner.Request) {
	if s.console == nil || req.TermSize == nil {
		return
	}
	if c, r, ok := req.TermSize(); ok {
		_ = unix.IoctlSetWinsize(int(s.console.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: c, Row: r})
	}
}

// abort releases everything after a failed start.
func (s *stdio) abort() {
	for _, c := range s.closeAfterStart {
		c.Close()
	}
	s.closeAfterStart = nil
	if s.consoleSock != nil {
		s.consoleSock.Close()
	}
}

// drain waits for the output copiers. The console master never reports EOF
// while cordon holds it, so it is closed first once the command is gone.
func (s *stdio) drain() {
	if s.console != nil {
		// Let the last output arrive before the master goes away.
		done := make(chan struct{})
		go func() { s.copiers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
		s.console.Close()
	}
	s.copiers.Wait()
}

func (s *stdio) close() {
	if s.stdinW != nil {
		s.stdinW.Close()
	}
	if s.console != nil {
		s.console.Close()
	}
}
