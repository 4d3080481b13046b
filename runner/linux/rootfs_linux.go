package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// A sandbox's / is an empty directory that holds only the mount points
// libcontainer makes for the sandbox's mounts (usr, etc, tmp, a file for
// each masked file, ...). Making and removing them took about twenty
// directory creations and removals per run, and on a host whose state
// directory is on a journaled disk rather than a tmpfs each costs up to a
// millisecond. So a run reuses the rootfs skeleton of an earlier run with
// the same layout:
//
//	DIR/roots/KEY/rootfs  the skeleton, the sandbox's read-only /
//	DIR/roots/KEY/lock    flock: shared while a run uses the skeleton,
//	                      exclusive while the first run makes it, or while
//	                      an unused one is removed
//	DIR/roots/KEY/ready   present once a run made every mount point
//
// KEY digests everything that decides what libcontainer creates in the
// skeleton (each mount's destination and type, whether a bind source is a
// directory, the devices, the working directory), so two runs that share a
// skeleton create exactly the same entries in it and a sandbox sees no name
// another layout made. The sandbox cannot write it: the root is always
// read-only (sharedRootfs refuses otherwise) and the sandbox holds no
// capability to remount it.

// rootsUnusedAfter is how long an unused skeleton is kept: long enough for
// the runs an agent makes in one workspace, short enough that a harness
// that runs each command in a fresh directory (a layout used once) leaves
// few behind for preflight to look at.
const rootsUnusedAfter = 10 * time.Minute

// rootsTouchAfter is how stale a skeleton's ready mark may get before a run
// that uses it renews it (at most one metadata write a minute).
const rootsTouchAfter = time.Minute

func (s *stateDir) rootsDir() string { return filepath.Join(s.dir, "roots") }

// rootfsKey digests what libcontainer creates in the rootfs for oci.
func rootfsKey(oci *specs.Spec) string {
	h := sha256.New()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		h.Write([]byte{'\n'})
	}
	for _, m := range oci.Mounts {
		kind := "-"
		if m.Type == "bind" || hasOption(m.Options, "bind") || hasOption(m.Options, "rbind") {
			kind = "file"
			// libcontainer follows the source's symlinks too.
			if fi, err := os.Stat(m.Source); err == nil && fi.IsDir() {
				kind = "dir"
			}
		}
		w("mount", m.Destination, m.Type, kind)
	}
	if oci.Process != nil {
		w("cwd", oci.Process.Cwd)
	}
	if oci.Linux != nil {
		for _, d := range oci.Linux.Devices {
			w("device", d.Path, d.Type)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

func hasOption(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// sharedRoot is one run's hold on a rootfs skeleton.
type sharedRoot struct {
	dir  string
	lock *os.File
	// making: this run holds the lock exclusively and makes the skeleton;
	// publish marks it ready.
	making bool
}

// sharedRootfs takes the skeleton for oci's layout, making its directory
// when it is new, and points oci's root at it. The hold ends with release.
func (s *stateDir) sharedRootfs(oci *specs.Spec) (*sharedRoot, error) {
	if oci.Root == nil || !oci.Root.Readonly {
		return nil, fmt.Errorf("%w: a shared rootfs skeleton needs a read-only root", runner.ErrSetup)
	}
	dir := filepath.Join(s.rootsDir(), rootfsKey(oci))
	for {
		sr, err := s.holdRoot(dir)
		if err != nil {
			return nil, fmt.Errorf("rootfs skeleton: %w", err)
		}
		if sr != nil {
			oci.Root.Path = filepath.Join(dir, "rootfs")
			return sr, nil
		}
		// reapRoots removed it while this run waited for its lock.
	}
}

// holdRoot locks the skeleton dir, shared when it is ready and
// exclusively (to make it) when not. It returns nil, nil when the lock it
// got is no longer dir's (the skeleton was removed meanwhile).
func (s *stateDir) holdRoot(dir string) (*sharedRoot, error) {
	if err := os.Mkdir(s.rootsDir(), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	// The sandbox's user must traverse dir; only cordon's user writes it.
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	lockPath := filepath.Join(dir, "lock")
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		how = unix.LOCK_EX
	}
	if err := flockRetry(lock, how); err != nil {
		lock.Close()
		return nil, err
	}
	held, err1 := lock.Stat()
	now, err2 := os.Stat(lockPath)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		lock.Close()
		return nil, nil
	}
	sr := &sharedRoot{dir: dir, lock: lock}
	ready, err := os.Stat(filepath.Join(dir, "ready"))
	switch {
	case err == nil && how == unix.LOCK_EX:
		// Another run made it while this one waited.
		if err := flockRetry(lock, unix.LOCK_SH); err != nil {
			lock.Close()
			return nil, err
		}
	case err == nil:
		if time.Since(ready.ModTime()) > rootsTouchAfter {
			t := time.Now()
			_ = os.Chtimes(filepath.Join(dir, "ready"), t, t)
		}
	case how == unix.LOCK_EX:
		if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			lock.Close()
			return nil, err
		}
		sr.making = true
	default:
		// Unready under a shared lock: reapRoots unmade it meanwhile.
		lock.Close()
		return nil, nil
	}
	return sr, nil
}

func flockRetry(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// publish marks the skeleton ready once this run's init made every mount
// point in it, and lets other runs share it.
func (sr *sharedRoot) publish() error {
	if sr == nil || !sr.making {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(sr.dir, "ready"), os.O_CREATE|os.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("rootfs skeleton: %w", err)
	}
	f.Close()
	sr.making = false
	return flockRetry(sr.lock, unix.LOCK_SH)
}

// release ends this run's hold on the skeleton.
func (sr *sharedRoot) release() {
	if sr != nil {
		sr.lock.Close()
	}
}

// reapRoots removes the skeletons no run has used for rootsUnusedAfter (or
// that a crashed first run left unfinished), when no run holds them.
func (s *stateDir) reapRoots() {
	entries, err := os.ReadDir(s.rootsDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(s.rootsDir(), e.Name())
		mark, err := os.Stat(filepath.Join(dir, "ready"))
		if err != nil {
			mark, err = os.Stat(filepath.Join(dir, "lock"))
		}
		if err != nil || time.Since(mark.ModTime()) < rootsUnusedAfter {
			continue
		}
		s.removeRoot(dir)
	}
}

// removeRoot removes the skeleton dir when no run holds it; a skeleton
// with anything but empty mount points in it is left in place. The lock
// file goes last, so a run that waited on it sees it is gone (holdRoot).
func (s *stateDir) removeRoot(dir string) {
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer lock.Close()
	if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	_ = os.Remove(filepath.Join(dir, "ready"))
	if err := removeEmptyTree(filepath.Join(dir, "rootfs")); err != nil {
		return
	}
	_ = os.Remove(filepath.Join(dir, "lock"))
	_ = os.Remove(dir)
}
