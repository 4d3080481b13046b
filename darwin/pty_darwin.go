//go:build darwin

package darwin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// ptyPair is a pseudo-terminal for a TTY run. The command gets the slave as
// its controlling terminal, so whatever it does to its terminal (TIOCSTI
// input injection included) stays inside this pty and never reaches the
// caller's terminal.
type ptyPair struct {
	master, slave *os.File
	done          sync.WaitGroup
	// keys carries each ^C typed at the terminal (runner.CopyKeys).
	keys chan struct{}
}

// openPTY allocates a pseudo-terminal pair.
func openPTY() (*ptyPair, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("pty: %w", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetInt(fd, unix.TIOCPTYGRANT, 0); err != nil {
		m.Close()
		return nil, fmt.Errorf("pty: grant: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.TIOCPTYUNLK, 0); err != nil {
		m.Close()
		return nil, fmt.Errorf("pty: unlock: %w", err)
	}
	buf := make([]byte, 128)
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCPTYGNAME, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
		m.Close()
		return nil, fmt.Errorf("pty: name: %w", errno)
	}
	name := string(buf[:bytes.IndexByte(append(buf, 0), 0)])
	s, err := os.OpenFile(name, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("pty: %w", err)
	}
	return &ptyPair{master: m, slave: s, keys: make(chan struct{}, 8)}, nil
}

// resize copies the caller's terminal size to the pty.
func (p *ptyPair) resize(size func() (cols, rows uint16, ok bool)) {
	if size == nil {
		return
	}
	if c, r, ok := size(); ok {
		_ = unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: c, Row: r})
	}
}

// copy writes typeAhead to the terminal (runner.Request.TypeAhead), then
// streams in to it and the terminal to out.
func (p *ptyPair) copy(typeAhead []byte, in io.Reader, out io.Writer) {
	if len(typeAhead) > 0 {
		_, _ = p.master.Write(typeAhead)
	}
	if in != nil {
		go runner.CopyKeys(p.master, in, p.keys)
	}
	if out == nil {
		out = io.Discard
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		_, _ = io.Copy(out, p.master)
	}()
}

// drain waits for the output copier: once every process holding the slave
// is gone, reading the master fails and the copier ends. A process that
// escaped the kill could hold the slave open, so drain closes the master
// after a grace period.
func (p *ptyPair) drain() {
	done := make(chan struct{})
	go func() {
		p.done.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		p.master.Close()
		<-done
	}
}

func (p *ptyPair) close() {
	p.slave.Close()
	p.master.Close()
}
