package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// placeholderRegistry tracks which runs rely on each placeholder directory,
// across processes. Concurrent runs on one workspace share placeholders:
// a run that removed one while another still relied on it would break the
// other's set-up, and worse, removing a directory that is a mount point in
// another mount namespace detaches that mount, lifting the other run's
// protection. So a placeholder is removed only by the last run using it.
//
// Layout: DIR/placeholders/lock (flock), DIR/placeholders/<sha256(path)>/
// holding "path" and one empty file per run ID.
type placeholderRegistry struct {
	dir string
}

func (s *stateDir) placeholders() *placeholderRegistry {
	return &placeholderRegistry{dir: filepath.Join(s.dir, "placeholders")}
}

// lock takes the registry's exclusive lock.
func (r *placeholderRegistry) lock() (func(), error) {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(r.dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func (r *placeholderRegistry) entry(path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(r.dir, hex.EncodeToString(sum[:16]))
}

// inUse reports whether a run has registered path as a placeholder.
func (r *placeholderRegistry) inUse(path string) bool {
	ents, err := os.ReadDir(r.entry(path))
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != "path" {
			return true
		}
	}
	return false
}

func (r *placeholderRegistry) add(path, id string) error {
	e := r.entry(path)
	if err := os.MkdirAll(e, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e, "path"), []byte(path), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e, id), nil, 0o600)
}

// release drops id's use of path and reports whether no run uses it now.
func (r *placeholderRegistry) release(path, id string) bool {
	e := r.entry(path)
	_ = os.Remove(filepath.Join(e, id))
	if r.inUse(path) {
		return false
	}
	_ = os.Remove(filepath.Join(e, "path"))
	_ = os.Remove(e)
	return true
}

// acquirePlaceholders, under the registry lock, joins every placeholder of
// another run that this run's guards rely on, then creates the missing ones.
// It returns every placeholder this run now uses.
func (s *stateDir) acquirePlaceholders(id string, guarded []string, create func() ([]string, error)) (used []string, err error) {
	reg := s.placeholders()
	unlock, err := reg.lock()
	if err != nil {
		return nil, fmt.Errorf("placeholder registry: %w", err)
	}
	defer unlock()
	for _, p := range guarded {
		if reg.inUse(p) {
			if err := reg.add(p, id); err != nil {
				return used, err
			}
			used = append(used, p)
		}
	}
	created, err := create()
	for _, c := range created {
		if aerr := reg.add(c, id); aerr != nil && err == nil {
			err = aerr
		}
		used = append(used, c)
	}
	return used, err
}

// releasePlaceholders drops this run's use of its placeholders and removes
// those no other run uses (deepest first), if they are still empty: a
// placeholder the command filled is kept, so nothing written is lost.
func (s *stateDir) releasePlaceholders(id string, used []string) {
	if len(used) == 0 {
		return
	}
	reg := s.placeholders()
	unlock, err := reg.lock()
	if err != nil {
		return
	}
	defer unlock()
	sorted := append([]string(nil), used...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, p := range sorted {
		if reg.release(p, id) {
			if err := unix.Rmdir(p); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) {
				continue
			}
		}
	}
}
