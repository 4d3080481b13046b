package session

import (
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/console"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
)

// consoleDrain is how long a TTY exec's output is still read after its
// command exited, when something still holds the terminal.
const consoleDrain = 200 * time.Millisecond

// newTTYExec sends a TTY exec: the shim opens a terminal in the sandbox's
// own devpts, as libcontainer's console socket does for a run, and sends
// its master back over a socket pair made for this exec.
func (s *linuxSession) newTTYExec(x *sessionExec, req runner.ExecRequest, cwd string, env []string) (*sessionExec, error) {
	flags := uint32(pid1.ProtoFlagTTY)
	if req.Detach {
		flags |= pid1.ProtoFlagDetach
	}
	leafProcs, err := s.takeLeaf(x, &flags, req.Memory)
	if err != nil {
		x.close()
		return nil, err
	}
	if leafProcs != nil {
		defer leafProcs.Close()
	}
	msg, err := pid1.EncodeExec(x.id, flags, termSize(req), cwd, req.Args, env)
	if err != nil {
		x.close()
		return nil, err
	}
	parent, child, err := console.SocketPair()
	if err != nil {
		x.close()
		return nil, err
	}
	defer parent.Close()
	err = s.sendExec(x, msg, s.leafFDs([]int{s.devNullFD, s.devNullFD, s.devNullFD, int(child.Fd())}, leafProcs))
	child.Close()
	if err != nil {
		x.close()
		return nil, err
	}
	// EOF here (no terminal) means the shim failed; its status says why.
	master, err := console.RecvFile(parent)
	if err != nil {
		return x, nil
	}
	// Through Go's poller, so closing it stops a read in progress.
	fd, err := unix.Dup(int(master.Fd()))
	master.Close()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	master = os.NewFile(uintptr(fd), "console")
	x.console = master
	out := io.MultiWriter(x.stdout, x.tail)
	x.copiers.Add(1)
	go func() {
		defer x.copiers.Done()
		_, _ = io.Copy(out, master)
	}()
	if len(req.TypeAhead) > 0 {
		_, _ = master.Write(req.TypeAhead)
	}
	if req.Stdin != nil {
		x.keys = make(chan struct{}, 8)
		x.stopIn = copyStdinKeys(master, req.Stdin, false, x.keys)
	}
	return x, nil
}

// termSize packs the caller's terminal size as the wire format wants it.
func termSize(req runner.ExecRequest) uint32 {
	if req.TermSize == nil {
		return 0
	}
	c, r, ok := req.TermSize()
	if !ok {
		return 0
	}
	return uint32(c)<<16 | uint32(r)
}

// resize gives a TTY exec's terminal the caller's size.
func (x *sessionExec) resize(req runner.ExecRequest) {
	if x.console == nil || req.TermSize == nil {
		return
	}
	if c, r, ok := req.TermSize(); ok {
		_ = unix.IoctlSetWinsize(int(x.console.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: c, Row: r})
	}
}

// waitCopiers waits for wg, for d at most.
func waitCopiers(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}
