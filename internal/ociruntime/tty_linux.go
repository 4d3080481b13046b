package ociruntime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"

	"github.com/containerd/console"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/utils"
	"golang.org/x/sys/unix"
)

// tty is the container process's stdio as runc's tty.go holds it: pipes,
// the host's own stdio (detached), or a pseudo-terminal whose master is
// either copied here (foreground) or handed to --console-socket.
type tty struct {
	epoller     *console.Epoller
	console     *console.EpollConsole
	hostConsole console.Console
	closers     []io.Closer
	postStart   []io.Closer
	wg          sync.WaitGroup
	consoleC    chan error
}

// setupIO prepares process's stdio, as runc's setupIO does.
func setupIO(p *libcontainer.Process, c *libcontainer.Container, createTTY, detach bool, sockpath string) (_ *tty, err error) {
	if createTTY {
		p.Stdin, p.Stdout, p.Stderr = nil, nil, nil
		t := &tty{}
		if !detach {
			if err := t.initHostConsole(); err != nil {
				return nil, err
			}
			parent, child, err := utils.NewSockPair("console")
			if err != nil {
				return nil, err
			}
			p.ConsoleSocket = child
			t.postStart = append(t.postStart, parent, child)
			t.consoleC = make(chan error, 1)
			go func() { t.consoleC <- t.recvtty(parent) }()
			return t, nil
		}
		// The caller receives the console's master on its socket.
		conn, err := net.Dial("unix", sockpath)
		if err != nil {
			return nil, fmt.Errorf("connect to the console socket %s: %w", sockpath, err)
		}
		defer func() {
			if err != nil {
				conn.Close()
			}
		}()
		t.postStart = append(t.postStart, conn)
		socket, err := conn.(*net.UnixConn).File()
		if err != nil {
			return nil, err
		}
		t.postStart = append(t.postStart, socket)
		p.ConsoleSocket = socket
		return t, nil
	}
	if detach {
		// The caller gave the container's stdio as ours.
		p.Stdin, p.Stdout, p.Stderr = os.Stdin, os.Stdout, os.Stderr
		return &tty{}, nil
	}
	cfg := c.Config()
	uid, err := cfg.HostRootUID()
	if err != nil {
		return nil, err
	}
	gid, err := cfg.HostRootGID()
	if err != nil {
		return nil, err
	}
	return setupProcessPipes(p, uid, gid)
}

func (t *tty) copyIO(w io.Writer, r io.ReadCloser) {
	defer t.wg.Done()
	_, _ = io.Copy(w, r)
	_ = r.Close()
}

func setupProcessPipes(p *libcontainer.Process, uid, gid int) (*tty, error) {
	i, err := p.InitializeIO(uid, gid)
	if err != nil {
		return nil, err
	}
	t := &tty{closers: []io.Closer{i.Stdin, i.Stdout, i.Stderr}}
	for _, cc := range []any{p.Stdin, p.Stdout, p.Stderr} {
		if c, ok := cc.(io.Closer); ok {
			t.postStart = append(t.postStart, c)
		}
	}
	go func() {
		_, _ = io.Copy(i.Stdin, os.Stdin)
		_ = i.Stdin.Close()
	}()
	t.wg.Add(2)
	go t.copyIO(os.Stdout, i.Stdout)
	go t.copyIO(os.Stderr, i.Stderr)
	return t, nil
}

func (t *tty) initHostConsole() error {
	for _, s := range []*os.File{os.Stderr, os.Stdout, os.Stdin} {
		c, err := console.ConsoleFromFile(s)
		if err == nil {
			t.hostConsole = c
			return nil
		}
		if !errors.Is(err, console.ErrNotAConsole) {
			return fmt.Errorf("unable to get console: %w", err)
		}
	}
	f, err := os.Open("/dev/tty")
	if err != nil {
		return err
	}
	c, err := console.ConsoleFromFile(f)
	if err != nil {
		return fmt.Errorf("unable to get console: %w", err)
	}
	t.hostConsole = c
	return nil
}

func (t *tty) recvtty(socket *os.File) (err error) {
	f, err := recvFile(socket)
	if err != nil {
		return err
	}
	cons, err := console.ConsoleFromFile(f)
	if err != nil {
		return err
	}
	if err := console.ClearONLCR(cons.Fd()); err != nil {
		return err
	}
	epoller, err := console.NewEpoller()
	if err != nil {
		return err
	}
	ec, err := epoller.Add(cons)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = ec.Close()
		}
	}()
	go func() { _ = epoller.Wait() }()
	go func() { _, _ = io.Copy(ec, os.Stdin) }()
	t.wg.Add(1)
	go t.copyIO(os.Stdout, ec)
	if err := t.hostConsole.SetRaw(); err != nil {
		return fmt.Errorf("failed to set the terminal from the stdin: %w", err)
	}
	go handleInterrupt(t.hostConsole)
	t.epoller, t.console = epoller, ec
	t.closers = []io.Closer{ec}
	return nil
}

// recvFile receives one file descriptor over a unix socket (the console
// master libcontainer's init sends).
func recvFile(socket *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(socket.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("receive the console: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive the console: bad control message (%d, %w)", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil, fmt.Errorf("receive the console: bad rights (%d, %w)", len(fds), err)
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}

func handleInterrupt(c console.Console) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	<-ch
	_ = c.Reset()
	os.Exit(0)
}

func (t *tty) waitConsole() error {
	if t.consoleC != nil {
		return <-t.consoleC
	}
	return nil
}

// closePostStart closes what only the start needed (the child's ends).
func (t *tty) closePostStart() {
	for _, c := range t.postStart {
		_ = c.Close()
	}
}

func (t *tty) Close() {
	t.closePostStart()
	if t.console != nil && t.epoller != nil {
		_ = t.console.Shutdown(t.epoller.CloseConsole)
	}
	t.wg.Wait()
	for _, c := range t.closers {
		_ = c.Close()
	}
	if t.hostConsole != nil {
		_ = t.hostConsole.Reset()
	}
}

func (t *tty) resize() error {
	if t.console == nil || t.hostConsole == nil {
		return nil
	}
	return t.console.ResizeFrom(t.hostConsole)
}
