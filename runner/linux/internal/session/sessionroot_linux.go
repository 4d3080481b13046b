package session

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// OpenRoot implements SessionRoot: it opens /proc/PID/root of the
// session's init, then checks that init is still alive through the pidfd
// taken when it started, so the directory opened is this session's root
// and not that of a process that reused the pid.
func (s *linuxSession) OpenRoot() (*os.File, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.rootMu.Lock()
	defer s.rootMu.Unlock()
	if s.initPidfd == nil {
		if err := s.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: session %s: its init cannot be named (no pidfd on this kernel)", runner.ErrUnsupported, s.id)
	}
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/root", s.initPid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("session %s: open its root: %w", s.id, err)
	}
	f := os.NewFile(uintptr(fd), "root")
	if err := unix.PidfdSendSignal(int(s.initPidfd.Fd()), 0, nil, 0); err != nil {
		f.Close() //nolint:errcheck,gosec // not used
		return nil, &runner.SessionGoneError{Session: s.id, Reason: "the sandbox's init exited"}
	}
	return f, nil
}
