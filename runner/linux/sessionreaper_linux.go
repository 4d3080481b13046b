package linux

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// sessionReaperArg makes the re-executed binary the reaper of one session:
// a process that outlives the session's supervisor only to remove what a
// supervisor killed with SIGKILL left on the host.
const sessionReaperArg = "cordon-session-reaper"

// sessionReaper is the supervisor's side of its reaper: the write end of a
// pipe only this process holds. The reaper waits on the read end: a 'D'
// means the session was closed and cleaned up here, so it exits; EOF
// without it means this process died, so it waits until this process is
// gone (its pidfd), then removes the session's container, cgroups,
// placeholders, state and the caller's locked directory, as the next
// cordon command would, but at once.
//
// The sandbox itself already dies with its supervisor: its PID 1 exits on
// EOF of the control socket, which ends every process of its PID
// namespace, and with it every mount of its mount namespace.
type sessionReaper struct {
	w *os.File
}

// startSessionReaper starts the reaper of session id. lockedDir, when not
// "", is a directory whose file "lock" this process holds flocked for the
// session's life; the reaper removes it too. The reaper runs in its own
// session, so that a signal to the supervisor's process group spares it.
func startSessionReaper(stateDir, id, lockedDir string) (*sessionReaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	files := []*os.File{r}
	// Without pidfds (before Linux 5.3) the reaper relies on the locks
	// alone, which the dead supervisor's exit releases.
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err == nil {
		pidfd := os.NewFile(uintptr(fd), "supervisor-pidfd")
		defer pidfd.Close()
		files = append(files, pidfd)
	}
	cmd := exec.Command("/proc/self/exe", sessionReaperArg, stateDir, id, lockedDir)
	cmd.ExtraFiles = files
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, err
	}
	go func() { _ = cmd.Wait() }()
	return &sessionReaper{w: w}, nil
}

// done tells the reaper the session was cleaned up here; it exits.
func (sr *sessionReaper) done() {
	if sr == nil || sr.w == nil {
		return
	}
	_, _ = sr.w.Write([]byte{'D'})
	sr.w.Close()
	sr.w = nil
}

// sessionReaperMain is the reaper process (see sessionReaper). With cgo,
// sessionreaper_linux.c has already waited for the supervisor's word
// before the Go runtime started, and only EOF gets here: the read below
// then sees EOF again at once.
func sessionReaperMain(args []string) int {
	if len(args) != 3 {
		return runner.ExitSetupError
	}
	stateDir, id, lockedDir := args[0], args[1], args[2]
	ctl := os.NewFile(3, "session-reaper")
	b := make([]byte, 1)
	if n, _ := ctl.Read(b); n == 1 && b[0] == 'D' {
		return 0
	}
	// EOF: the supervisor died, or is dying. Its pidfd turns readable once
	// it has exited, after its descriptors (and so its locks) are closed.
	var st unix.Stat_t
	if unix.Fstat(4, &st) == nil {
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: 4, Events: unix.POLLIN}}, -1)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
	}
	reapSession(stateDir, id, lockedDir)
	return 0
}

// reapSession removes what session id's dead supervisor left. It creates
// nothing: a state directory removed meanwhile (a test's temporary one)
// stays removed.
func reapSession(stateDir, id, lockedDir string) {
	if fi, err := os.Lstat(filepath.Join(stateDir, "runs", id)); err == nil && fi.IsDir() {
		if s, err := openStateDir(stateDir); err == nil {
			s.reapRun(id)
		}
	}
	if lockedDir != "" {
		removeLockedDir(lockedDir)
	}
}

// reapRun cleans up after run id once its lock is free: its cordon is
// dead, and whoever else holds the lock (another cordon's reapStale) only
// does the same cleanup.
func (s *stateDir) reapRun(id string) {
	f, err := os.OpenFile(filepath.Join(s.runDir(id), "lock"), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return // cleaned up already
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return
	}
	if _, err := os.Lstat(s.runDir(id)); err == nil {
		s.cleanupLogged(id)
	}
}

// removeLockedDir removes dir and the files in it (and its detached/), when its lock is free
// (a new session of the same name holds it otherwise).
func removeLockedDir(dir string) {
	lock := filepath.Join(dir, "lock")
	f, err := os.OpenFile(lock, os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch {
		case e.IsDir() && e.Name() == "detached":
			// The logs of a named session's detached execs.
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		case !e.IsDir() && e.Name() != "lock":
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(lock)
	_ = os.Remove(dir)
}
