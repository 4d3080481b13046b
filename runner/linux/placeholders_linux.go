package linux

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// placeholderRegistry tracks which runs relied on each placeholder
// directory, across processes. Runs no longer create placeholders (the
// broker guards missing deny and protect paths); the registry is kept so
// that the placeholders of a run of an earlier cordon that crashed are
// still removed once no run uses them. Concurrent runs on one workspace share placeholders:
// a run that removed one while another still relied on it would break the
// other's set-up, and worse, removing a directory that is a mount point in
// another mount namespace detaches that mount, lifting the other run's
// protection. So a placeholder is removed only by the last run using it.
//
// It is one JSON file (path -> run IDs) read and rewritten under an flock,
// so a run costs a handful of file operations however many paths it guards.
type placeholderRegistry struct {
	dir  string
	lock *os.File
	uses map[string][]string
}

func (s *stateDir) placeholders() *placeholderRegistry {
	return &placeholderRegistry{dir: filepath.Join(s.dir, "placeholders")}
}

// open takes the registry's exclusive lock and reads it.
func (r *placeholderRegistry) open() error {
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(r.dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return err
	}
	r.lock = f
	r.uses = map[string][]string{}
	data, err := os.ReadFile(filepath.Join(r.dir, "registry.json"))
	if err == nil {
		// A registry that cannot be read is treated as empty: at worst a
		// placeholder is kept that could have been removed.
		_ = json.Unmarshal(data, &r.uses)
	}
	return nil
}

// close writes the registry back and releases the lock.
func (r *placeholderRegistry) close() error {
	defer r.lock.Close()
	for p, ids := range r.uses {
		if len(ids) == 0 {
			delete(r.uses, p)
		}
	}
	data, err := json.Marshal(r.uses)
	if err != nil {
		return err
	}
	tmp := filepath.Join(r.dir, "registry.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir, "registry.json"))
}

// release drops id's use of path and reports whether no run uses it now.
func (r *placeholderRegistry) release(path, id string) bool {
	ids := r.uses[path]
	for i, u := range ids {
		if u == id {
			ids = append(ids[:i], ids[i+1:]...)
			break
		}
	}
	r.uses[path] = ids
	return len(ids) == 0
}

// releasePlaceholders drops this run's use of its placeholders and removes
// those no other run uses (deepest first), if they are still empty: a
// placeholder the command filled is kept, so nothing written is lost.
func (s *stateDir) releasePlaceholders(id string, used []string) {
	if len(used) == 0 {
		return
	}
	reg := s.placeholders()
	if err := reg.open(); err != nil {
		return
	}
	sorted := append([]string(nil), used...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, p := range sorted {
		if reg.release(p, id) {
			_ = unix.Rmdir(p) // fails (and keeps it) when the command filled it
		}
	}
	_ = reg.close()
}
