package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
)

// waitPolled is wait for a plain exec (neither detached nor on a
// terminal): the calling goroutine itself polls the shim's socket for the
// status and the command's stdout and stderr pipes, and copies the output
// as it comes, until it has the status. A warm exec is a few system calls,
// and the Go scheduler's hand-offs between the copier and status
// goroutines (each woken through the network poller, often on another
// thread) cost as much as the rest of the supervisor's work.
//
// The timeout, a cancel and the forwarded signals do not depend on this
// loop: a timer, a context callback and a signal goroutine send their
// requests to the shim themselves, so a consumer that stops reading the
// output (a write here then blocks) never delays the kill. Nor does such
// a consumer decide the outcome: a callback that finds the status waiting
// on the socket (the command is over; the loop is in a write) leaves the
// exec alone, and the loop reads the socket only under x.mu, so a callback
// sees the status either there or read.
func (x *sessionExec) waitPolled(ctx context.Context, req runner.ExecRequest) (pid1.ExecStatus, bool, bool, error) {
	var (
		st    pid1.ExecStatus
		stErr error
	)
	// end marks the exec finished, on every way out: from then on no
	// callback acts.
	end := func() (pid1.ExecStatus, bool, bool, error) {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.finished = true
		if x.grace != nil {
			x.grace.Stop()
		}
		return st, x.timedOut, x.canceled, stErr
	}
	defer x.armPolled(ctx, req)()
	conn, err := x.connFD()
	if err != nil {
		stErr = err
		return end()
	}
	status := make([]byte, 0, pid1.ProtoStatusSize+1)
	for done := false; !done; {
		// The status first: once it is read, wait returns (the output
		// left is drained after, by drainPolled).
		pfds, err := x.pollPolledFor(conn, x.quietLeft())
		if err != nil {
			stErr = fmt.Errorf("waiting for the exec: %w", err)
			break
		}
		if x.quiet != nil && !ready(pfds) {
			// ExecQuiet passed: the command runs on, and its brokered
			// calls may have the keeper again.
			x.quiet()
			x.quiet = nil
			continue
		}
		if pfds[0].Revents != 0 {
			// Under mu, so that a callback's statusPending never
			// falls between this read and the end of the exec. Poll
			// said readable: the read does not block.
			x.mu.Lock()
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
				if len(status) >= pid1.ProtoStatusSize {
					st, stErr = pid1.DecodeStatus(status)
					done = true
				}
			}
			x.finished = x.finished || done
			x.mu.Unlock()
			continue
		}
		x.copyPolled(pfds[1:])
	}
	return end()
}

// armPolled starts what acts on a polled exec while wait reads: the
// timeout's timer, the cancel's callback and the signal forwarder. Each
// acts through act, under x.mu and only while the exec is not finished.
// The returned func stops them.
func (x *sessionExec) armPolled(ctx context.Context, req runner.ExecRequest) (disarm func()) {
	var stops []func()
	// A timer or cancel that comes after the command ended (its status
	// waits on the socket) leaves the outcome as the status says.
	if t := x.timeout(req); t > 0 {
		timer := time.AfterFunc(t, func() {
			x.act(func() {
				if !x.statusPending() {
					x.timedOut = true
					x.killTree()
				}
			})
		})
		stops = append(stops, func() { timer.Stop() })
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			x.act(func() {
				if !x.statusPending() {
					x.canceled = true
					x.killTree()
				}
			})
		})
		stops = append(stops, func() { stop() })
	}
	if req.Signals != nil {
		done := make(chan struct{})
		stops = append(stops, func() { close(done) })
		go func() {
			for {
				select {
				case sig, ok := <-req.Signals:
					if !ok {
						return
					}
					x.act(func() {
						x.signaled = true
						_ = trySend(x.conn, pid1.EncodeSignal(x.id, int32(sig)))
					})
				case <-done:
					return
				}
			}
		}()
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// act runs f under x.mu unless the exec is finished: after that the shim
// may serve another exec, which no late request may reach. What f sends
// goes with trySend, which never blocks under x.mu.
func (x *sessionExec) act(f func()) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.finished {
		f()
	}
}

// killTree asks the shim to kill the exec's tree and starts the grace
// period after which a shim that did not answer ends the session. Called
// under x.mu.
func (x *sessionExec) killTree() {
	x.signaled = true
	_ = trySend(x.conn, pid1.EncodeSignal(x.id, pid1.ProtoSigKillTree))
	if x.grace != nil {
		return
	}
	x.grace = time.AfterFunc(killGrace, func() {
		x.act(func() {
			// A whole status waiting to be read (the loop is in a
			// write to a slow consumer) says the shim did its part:
			// the tree is dead. Anything else, the shim's end closed
			// included, is a shim that did not.
			if !x.statusPending() {
				x.s.kill(fmt.Sprintf("exec %d did not stop within %s of being killed", x.id, killGrace))
			}
		})
	})
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

// statusPending reports whether the shim's whole status record waits to
// be read on its socket. The shim's end closed (EOF) or part of a record
// is no status: the shim is gone or still writing.
func (x *sessionExec) statusPending() bool {
	_, ok := peekStatus(x.conn)
	return ok
}

// quietLeft is how long waitPolled may poll before the exec's Quiet
// ends: -1 (no limit) once it has; 0 when it is due.
func (x *sessionExec) quietLeft() time.Duration {
	if x.quiet == nil {
		return -1
	}
	return max(time.Until(x.quietUntil), 0)
}

// pollPolledFor waits until conn (when >= 0; first in the result) or one
// of the exec's open output pipes is readable, for at most d (d < 0: no
// limit), and returns what was polled: nothing is readable in it when d
// passed.
func (x *sessionExec) pollPolledFor(conn int, d time.Duration) ([]unix.PollFd, error) {
	ms := -1
	if d >= 0 {
		ms = int((d + time.Millisecond - 1) / time.Millisecond) // not less than d
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
// pipes are quiet for outputQuiet, or at the latest drainCap after the
// status, so such a process cannot hold the exec (and its client) open;
// what the pipes hold then, at most their capacity, is still copied, so a
// slow consumer loses none of the tree's own output.
func (x *sessionExec) drainPolled() {
	deadline := time.Now().Add(drainCap)
	for x.anyPolled() {
		left := time.Until(deadline)
		if left <= 0 {
			x.copyBuffered()
			return
		}
		pfds, err := x.pollPolledFor(-1, min(left, outputQuiet))
		if err != nil || !ready(pfds) {
			return // quiet: x.close closes what is left
		}
		x.copyPolled(pfds[1:])
	}
}

// anyPolled reports whether an output pipe is still open.
func (x *sessionExec) anyPolled() bool {
	for _, fd := range x.polled {
		if fd >= 0 {
			return true
		}
	}
	return false
}

// copyBuffered copies what each open output pipe holds now, at most its
// capacity: a writer that keeps writing adds nothing past that.
func (x *sessionExec) copyBuffered() {
	if x.buf == nil {
		x.buf = make([]byte, 32<<10)
	}
	for i, fd := range x.polled {
		if fd < 0 {
			continue
		}
		left, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			left = 64 << 10
		}
		for left > 0 {
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(p, 0); err != nil || n == 0 {
				break
			}
			n, err := unix.Read(fd, x.buf[:min(len(x.buf), left)])
			if n <= 0 || err != nil {
				break
			}
			left -= n
			_, _ = x.polledDst[i].Write(x.buf[:n])
		}
	}
}

// outputQuiet is how long the output of an exec whose tree is dead is read
// without anything coming before it is left.
const outputQuiet = 100 * time.Millisecond

// drainCap is how long at most the output of an exec whose tree is dead
// is read: a process outside the tree that holds the pipe and writes a
// little every so often never lets it be quiet.
const drainCap = time.Second

// ready reports whether any of pfds polled readable.
func ready(pfds []unix.PollFd) bool {
	for _, p := range pfds {
		if p.Revents != 0 {
			return true
		}
	}
	return false
}
