package session

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
)

// spareShims is how many shims a session starts with, forked ahead of
// their exec: an exec is sent straight to an idle shim, which serves
// execs one after another as long as each leaves nothing behind. When
// none is idle (concurrent execs), the fork server forks one for the exec
// and another spare, in one request. At most maxIdleShims stay idle.
const (
	spareShims   = 2
	maxIdleShims = 32
)

// sendExec sends the EXEC request msg, with fds, to an idle shim, and
// gives x that shim's socket. An idle shim a command killed (same uid)
// refuses the request at once; the next one is tried, and after the idle
// ones, a new one.
func (s *linuxSession) sendExec(x *sessionExec, msg []byte, fds []int) error {
	var err error
	forkFailed := 0
	for try := 0; try < maxIdleShims+2; try++ {
		var sh shimConn
		if sh, err = s.takeShim(); err != nil {
			return err
		}
		// A status before any request: the fork server could not fork
		// this shim (it says so on the shim's socket), or the shim could
		// not put back its attributes. Either way it serves nothing.
		if st, ok := peekStatus(sh.f); ok {
			sh.f.Close()
			if st.Phase == pid1.PhaseAttrs {
				s.kill(attrsReason(st.Errno))
				return s.Err()
			}
			err = s.noFork(st.Errno)
			if forkFailed++; forkFailed == 2 {
				return err
			}
			continue
		}
		// Before the command can run, so that none of its refusals is
		// missed.
		x.trackerIno = s.denials.watch(sh.ino)
		if err = sendOn(sh.f, msg, fds); err == nil {
			x.conn, x.shim = sh.f, sh
			return nil
		}
		s.denials.take(x.trackerIno)
		sh.f.Close()
		if gerr := s.Err(); gerr != nil {
			return gerr
		}
	}
	return err
}

// shimConn is the supervisor's end of a shim's socket, and the inode of
// the shim's end: the broker names an exec's processes by it.
type shimConn struct {
	f   *os.File
	ino uint64
}

// takeShim returns the socket of an idle shim, the one used last, or of
// one the fork server forks for it (with a spare) when none is idle.
func (s *linuxSession) takeShim() (shimConn, error) {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	if len(s.spares) == 0 {
		if err := s.topUp(2); err != nil {
			return shimConn{}, err
		}
	}
	sh := s.spares[len(s.spares)-1]
	s.spares = s.spares[:len(s.spares)-1]
	return sh, nil
}

// putShim gives back the socket of a shim that waits for another exec.
func (s *linuxSession) putShim(sh shimConn) {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	if s.sparesEnded || len(s.spares) >= maxIdleShims {
		sh.f.Close() // the shim reads EOF and exits
		return
	}
	s.spares = append(s.spares, sh)
}

// topUp asks the fork server, in one request, for n shims. spareMu is
// held.
func (s *linuxSession) topUp(n int) error {
	if s.sparesEnded {
		if err := s.Err(); err != nil {
			return err
		}
		return fmt.Errorf("%w: the session is closing", runner.ErrSetup)
	}
	n = min(n, pid1.ProtoMaxSpares)
	var parents []shimConn
	child := make([]int, 0, n)
	defer func() {
		for _, fd := range child {
			unix.Close(fd)
		}
	}()
	for i := 0; i < n; i++ {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			break
		}
		// The supervisor's end goes through Go's poller.
		if err := unix.SetNonblock(fds[0], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			break
		}
		var st unix.Stat_t
		if err := unix.Fstat(fds[1], &st); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			break
		}
		parents = append(parents, shimConn{os.NewFile(uintptr(fds[0]), "session-shim"), st.Ino})
		child = append(child, fds[1])
	}
	err := fmt.Errorf("%w: no socket for a shim", runner.ErrSetup)
	if len(child) > 0 {
		err = s.send(pid1.EncodeSpare(), child)
	}
	if err != nil {
		for _, sh := range parents {
			sh.f.Close()
		}
		return err
	}
	s.spares = append(s.spares, parents...)
	return nil
}

// send writes one request to the fork server, with fds attached to its
// first byte.
func (s *linuxSession) send(msg []byte, fds []int) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := sendOn(s.ctrl, msg, fds); err != nil {
		return fmt.Errorf("send to the session's init: %w", err)
	}
	return nil
}

// trySend sends msg on f in one call that never blocks: it is for
// requests sent while holding a lock that the exec's status read also
// takes. A shim whose socket is full (it stopped reading) gets EAGAIN,
// and the kill's grace period deals with a shim that does not answer.
func trySend(f *os.File, msg []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		var n int
		n, serr = unix.SendmsgN(int(fd), msg, nil, nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
		if serr == nil && n < len(msg) {
			serr = fmt.Errorf("sent %d of %d bytes", n, len(msg))
		}
	}); err != nil {
		return err
	}
	return serr
}

// sendOn writes msg to the socket f, with fds attached to its first byte.
func sendOn(f *os.File, msg []byte, fds []int) error {
	var rights []byte
	if len(fds) > 0 {
		rights = unix.UnixRights(fds...)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(msg) > 0 {
		var n int
		var serr error
		werr := rc.Write(func(fd uintptr) bool {
			n, serr = unix.SendmsgN(int(fd), msg, rights, nil, unix.MSG_NOSIGNAL)
			return serr != unix.EAGAIN
		})
		if werr == nil {
			werr = serr
		}
		if werr != nil {
			return werr
		}
		msg, rights = msg[n:], nil
	}
	return nil
}

// peekStatus returns the status record waiting on a shim's socket, if a
// whole one does, without reading it. The shim's end closed (EOF) or part
// of a record is none.
func peekStatus(f *os.File) (pid1.ExecStatus, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return pid1.ExecStatus{}, false
	}
	var b [pid1.ProtoStatusSize]byte
	n := -1
	_ = rc.Control(func(fd uintptr) {
		for {
			var err error
			if n, _, err = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT); err != unix.EINTR {
				return
			}
		}
	})
	if n != pid1.ProtoStatusSize {
		return pid1.ExecStatus{}, false
	}
	st, err := pid1.DecodeStatus(b[:])
	return st, err == nil
}

// noFork is the setup error of an exec the sandbox could not fork a
// process for.
func (s *linuxSession) noFork(errno int32) error {
	if unix.Errno(errno) == unix.EAGAIN && s.eff.Limits.Pids > 0 {
		return fmt.Errorf("%w: the sandbox could not fork a process to run the command (EAGAIN): the session's processes reach its pids limit of %d; the session goes on, retry when some have ended", runner.ErrSetup, s.eff.Limits.Pids)
	}
	return fmt.Errorf("%w: the session could not start the command: %s", runner.ErrSetup, unix.ErrnoName(unix.Errno(errno)))
}
