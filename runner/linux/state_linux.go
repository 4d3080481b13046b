package linux

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// stateDir lays out cordon's run state:
//
//	DIR/lc/ID/        libcontainer's own state for run ID
//	DIR/runs/ID/lock  held (flock) by the cordon process running ID
//	DIR/runs/ID/run.json  what the run created on the host (placeholders)
//	DIR/roots/KEY/        the rootfs skeletons runs share (rootfs_linux.go)
//
// A run directory whose lock can be taken belongs to a cordon that died
// (SIGKILL); the next run removes everything it left behind.
type stateDir struct {
	dir string
}

// runRecord is what a run writes down before it changes the host, so that a
// later run can undo it after a crash.
type runRecord struct {
	ID  string `json:"id"`
	PID int    `json:"pid"`
	// Placeholders are the placeholder directories this run uses (created
	// by it or joined from a concurrent run), registered in the placeholder
	// registry.
	Placeholders []string `json:"placeholders,omitempty"`
}

// defaultStateDir picks a private state directory: /run/cordon for root,
// $XDG_RUNTIME_DIR/cordon or $TMPDIR/cordon-UID otherwise.
func defaultStateDir() string {
	if os.Geteuid() == 0 {
		return "/run/cordon"
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		if fi, err := os.Stat(x); err == nil && fi.IsDir() && ownedBy(fi, os.Geteuid()) {
			return filepath.Join(x, "cordon")
		}
	}
	return filepath.Join(os.TempDir(), "cordon-"+strconv.Itoa(os.Geteuid()))
}

func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// openStateDir creates dir with mode 0700 and refuses one that another user
// owns or that others can write: a state directory planted by someone else
// could redirect the sandbox's rootfs.
func openStateDir(dir string) (*stateDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() || !ownedBy(fi, os.Geteuid()) || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("state dir %s must be a directory owned by uid %d and writable only by it", dir, os.Geteuid())
	}
	for _, sub := range []string{"lc", "runs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	return &stateDir{dir: dir}, nil
}

func (s *stateDir) lcRoot() string              { return filepath.Join(s.dir, "lc") }
func (s *stateDir) runDir(id string) string     { return filepath.Join(s.dir, "runs", id) }
func (s *stateDir) rootfs(id string) string     { return filepath.Join(s.runDir(id), "rootfs") }
func (s *stateDir) recordPath(id string) string { return filepath.Join(s.runDir(id), "run.json") }

// newRunID returns a random container ID.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "cordon-" + hex.EncodeToString(b[:])
}

// begin creates the run directory and takes its lock. The returned function
// releases the lock; call it only after cleanup.
func (s *stateDir) begin(id string) (unlock func(), err error) {
	// The run directory appears under its final name only once its lock
	// is held, so a concurrent reapStale never mistakes it for a dead run.
	tmp := filepath.Join(s.dir, "runs", ".new-"+id)
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(tmp, "lock"), os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	fail := func(err error) (func(), error) {
		f.Close()
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(fmt.Errorf("lock run dir: %w", err))
	}
	if err := os.Rename(tmp, s.runDir(id)); err != nil {
		return fail(fmt.Errorf("publish run dir: %w", err))
	}
	return func() { f.Close() }, nil
}

func (s *stateDir) writeRecord(rec runRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	tmp := s.recordPath(rec.ID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.recordPath(rec.ID))
}

// cleanup undoes everything run id left on the host: the container and its
// cgroups, the placeholders, the rootfs skeleton and the run directory.
// It never deletes a regular file outside the run directory.
func (s *stateDir) cleanup(id string) error { return s.cleanupRun(id, nil) }

// cleanupRun is cleanup with the run's container when the caller holds it
// (nil: loaded from its state, as a sweep of a dead run does): a run that
// ends destroys the container it made without reading its state back.
func (s *stateDir) cleanupRun(id string, held *libcontainer.Container) error {
	var errs []error
	c, err := held, error(nil)
	if c == nil {
		c, err = libcontainer.Load(s.lcRoot(), id)
	}
	if err == nil {
		// Destroy refuses a running container: kill it first. Killing the
		// init ends its whole PID namespace.
		if st, serr := c.Status(); serr == nil && st != libcontainer.Stopped {
			_ = c.Signal(unix.SIGKILL)
			waitStopped(c)
		}
		if err := c.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("destroy container: %w", err))
		}
	} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, libcontainer.ErrNotExist) {
		errs = append(errs, fmt.Errorf("load container: %w", err))
		// The state may be half written; remove it so it cannot wedge.
		_ = os.RemoveAll(filepath.Join(s.lcRoot(), id))
	}
	var rec runRecord
	if data, err := os.ReadFile(s.recordPath(id)); err == nil {
		_ = json.Unmarshal(data, &rec)
	}
	s.releasePlaceholders(id, rec.Placeholders)
	if err := removeEmptyTree(s.rootfs(id)); err != nil {
		errs = append(errs, err)
	}
	rd := s.runDir(id)
	for _, f := range []string{"run.json", "run.json.tmp", "lock"} {
		_ = os.Remove(filepath.Join(rd, f))
	}
	if err := os.Remove(rd); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// waitStopped waits until c's init is gone, for a few seconds at most.
func waitStopped(c *libcontainer.Container) {
	for i := 0; i < 200; i++ {
		if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reapStale cleans up after runs whose cordon process died.
func (s *stateDir) reapStale() {
	entries, err := os.ReadDir(filepath.Join(s.dir, "runs"))
	if err != nil {
		return
	}
	for _, e := range entries {
		id := e.Name()
		if strings.HasPrefix(id, ".new-") {
			// A run that died before publishing its directory left only
			// an empty skeleton and a lock file.
			if fi, err := e.Info(); err == nil && age(fi) > 60 {
				_ = os.RemoveAll(filepath.Join(s.dir, "runs", id))
			}
			continue
		}
		f, err := os.OpenFile(filepath.Join(s.runDir(id), "lock"), os.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			s.cleanupLogged(id)
		}
		f.Close()
	}
}

func (s *stateDir) cleanupLogged(id string) {
	err := s.cleanup(id)
	logrus.WithField("run", id).WithError(err).Info("cleaned up after a run whose cordon died")
}

func age(fi os.FileInfo) float64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	var now unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &now)
	return float64(now.Sec - st.Mtim.Sec)
}

// removeEmptyTree removes a tree of directories bottom-up. It refuses to
// remove anything but empty directories, so a mount that is somehow still
// attached can never lose its files.
func removeEmptyTree(root string) error {
	rfi, err := os.Lstat(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	rootDev := rfi.Sys().(*syscall.Stat_t).Dev
	var dirs []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if fi, ierr := d.Info(); ierr == nil && fi.Sys().(*syscall.Stat_t).Dev != rootDev {
			return fmt.Errorf("rootfs skeleton %s still has a mount at %s: left in place", root, p)
		}
		if !d.IsDir() {
			// libcontainer creates empty files as mount points for file
			// binds (masked files); those are empty regular files.
			if fi, ierr := d.Info(); ierr == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
				dirs = append(dirs, p)
				return nil
			}
			return fmt.Errorf("rootfs skeleton %s holds a non-empty file %s: left in place", root, p)
		}
		dirs = append(dirs, p)
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove rootfs skeleton: %w", err)
		}
	}
	return nil
}
