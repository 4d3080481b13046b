package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"
)

// waitPolled is wait for a plain exec (neither detached nor on a
// terminal): the calling goroutine itself polls the shim's socket for the
// status and the command's stdout and stderr pipes, and copies the output
// as it comes, until it has the status and both pipes are at EOF. A warm
// exec is a few system calls, and the Go scheduler's hand-offs between
// the copier and status goroutines (each woken through the network
// poller, often on another thread) cost as much as the rest of the
// supervisor's work.
//
// The timeout, a cancel and the forwarded signals do not depend on this
// loop: a timer, a context callback and a signal goroutine send their
// requests to the shim themselves, so a consumer that stops reading the
// output (a write here then blocks) never delays the kill.
func (x *sessionExec) waitPolled(ctx context.Context, req ExecRequest) (st execStatus, timedOut, canceled bool, stErr error) {
	var grace *time.Timer
	// act runs f unless the exec is finished: after that the shim may
	// serve another exec, which no late request may reach.
	act := func(f func()) {
		x.mu.Lock()
		defer x.mu.Unlock()
		if !x.finished {
			f()
		}
	}
	killTree := func() {
		x.signaled = true
		_ = sendOn(x.conn, encodeSignal(x.id, protoSigKillTree), nil)
		if grace == nil {
			grace = time.AfterFunc(killGrace, func() {
				act(func() {
					// A status waiting to be read (the loop is in a
					// write to a slow consumer) says the shim did its
					// part: the tree is dead.
					if !x.statusPending() {
						x.s.kill(fmt.Sprintf("exec %d did not stop within %s of being killed", x.id, killGrace))
					}
				})
			})
		}
	}
	if t := x.timeout(req); t > 0 {
		timer := time.AfterFunc(t, func() { act(func() { timedOut = true; killTree() }) })
		defer timer.Stop()
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { act(func() { canceled = true; killTree() }) })
		defer stop()
	}
	if req.Signals != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case sig, ok := <-req.Signals:
					if !ok {
						return
					}
					act(func() {
						x.signaled = true
						_ = sendOn(x.conn, encodeSignal(x.id, int32(sig)), nil)
					})
				case <-done:
					return
				}
			}
		}()
	}
	conn, err := x.connFD()
	if err != nil {
		return st, false, false, err
	}
	status := make([]byte, 0, protoStatusSize+1)
	for done := false; !done; {
		// The status first: once it is read, wait returns (the output
		// left is drained after, by drainPolled).
		pfds, err := x.pollPolled(conn)
		if err != nil {
			stErr = fmt.Errorf("waiting for the exec: %w", err)
			break
		}
		if pfds[0].Revents != 0 {
			n, err := unix.Read(conn, status[len(status):cap(status)])
			switch {
			case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			case err != nil || n == 0:
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				stErr = fmt.Errorf("the exec's tracker in the sandbox ended without a status (killed from inside?): %w", err)
				done = true
			default:
				status = status[:len(status)+n]
				if len(status) >= protoStatusSize {
					st, stErr = decodeStatus(status)
					done = true
				}
			}
			continue
		}
		x.copyPolled(pfds[1:])
	}
	// From here on no callback acts (act checks finished under mu).
	x.mu.Lock()
	defer x.mu.Unlock()
	x.finished = true
	if grace != nil {
		grace.Stop()
	}
	return st, timedOut, canceled, stErr
}

// connFD is the raw descriptor of the exec's shim socket.
func (x *sessionExec) connFD() (int, error) {
	conn := -1
	rc, err := x.conn.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) { conn = int(fd) })
	}
	if err != nil {
		return -1, fmt.Errorf("the exec's tracker socket: %w", err)
	}
	return conn, nil
}

// statusPending reports whether the shim's status (or its end of the
// socket's closing) waits to be read.
func (x *sessionExec) statusPending() bool {
	conn, err := x.connFD()
	if err != nil {
		return false
	}
	p := []unix.PollFd{{Fd: int32(conn), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}

// pollPolled waits until conn (when >= 0; first in the result) or one of
// the exec's open output pipes is readable, and returns what was polled.
func (x *sessionExec) pollPolled(conn int) ([]unix.PollFd, error) {
	return x.pollPolledFor(conn, -1)
}

// pollPolledFor is pollPolled for at most d (d < 0: no limit); nothing is
// readable in the result when d passed.
func (x *sessionExec) pollPolledFor(conn int, d time.Duration) ([]unix.PollFd, error) {
	ms := -1
	if d >= 0 {
		ms = int(d / time.Millisecond)
	}
	pfds := make([]unix.PollFd, 0, 1+len(x.polled))
	pfds = append(pfds, unix.PollFd{Fd: int32(conn), Events: unix.POLLIN})
	for _, fd := range x.polled {
		if fd >= 0 {
			pfds = append(pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
	}
	for {
		_, err := unix.Poll(pfds, ms)
		if !errors.Is(err, unix.EINTR) {
			return pfds, err
		}
	}
}

// copyPolled copies what the readable pipes among pfds hold to their
// destinations, and closes those at EOF.
func (x *sessionExec) copyPolled(pfds []unix.PollFd) {
	if x.buf == nil {
		x.buf = make([]byte, 32<<10)
	}
	for _, p := range pfds {
		if p.Revents == 0 {
			continue
		}
		for i, fd := range x.polled {
			if fd != int(p.Fd) {
				continue
			}
			n, err := unix.Read(fd, x.buf)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				break
			}
			if n <= 0 || err != nil {
				unix.Close(fd)
				x.polled[i] = -1
				break
			}
			_, _ = x.polledDst[i].Write(x.buf[:n])
		}
	}
}

// drainPolled copies what is left of the exec's output once its status
// came. The command's tree is dead then (or the whole session is), so what
// its processes wrote is in the pipes and each reaches EOF at once, unless
// a process outside the tree holds a write end: one a detached exec left
// running, sent the descriptor over a Unix socket. Reading stops when the
// pipes are quiet for outputQuiet, so such a process cannot hold the exec
// (and its client) open.
func (x *sessionExec) drainPolled() {
	for {
		open := false
		for _, fd := range x.polled {
			open = open || fd >= 0
		}
		if !open {
			return
		}
		pfds, err := x.pollPolledFor(-1, outputQuiet)
		if err != nil || !ready(pfds) {
			return // quiet: x.close closes what is left
		}
		x.copyPolled(pfds[1:])
	}
}

// outputQuiet is how long the output of an exec whose tree is dead is read
// without anything coming before it is left.
const outputQuiet = 100 * time.Millisecond

// ready reports whether any of pfds polled readable.
func ready(pfds []unix.PollFd) bool {
	for _, p := range pfds {
		if p.Revents != 0 {
			return true
		}
	}
	return false
}
