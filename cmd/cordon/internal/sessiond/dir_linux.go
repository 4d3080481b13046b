package sessiond

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Info describes a running named session (DIR/sessions/NAME/info.json).
type Info struct {
	Name string `json:"name"`
	// PID is the supervisor process.
	PID int `json:"pid"`
	// ID is the session's sandbox id (its libcontainer container).
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	// Root is the sandbox's workspace.
	Root string `json:"root,omitempty"`
	// Config names the config the sandbox came from.
	Config string `json:"config,omitempty"`
}

// Dir is the directory of named sessions under a state directory.
type Dir struct{ path string }

// OpenDir opens (creating it) the sessions directory under stateDir, which
// must be cordon's private state directory.
func OpenDir(stateDir string) (*Dir, error) {
	if err := checkPrivate(stateDir); err != nil {
		return nil, err
	}
	p := filepath.Join(stateDir, "sessions")
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := checkPrivate(p); err != nil {
		return nil, err
	}
	return &Dir{path: p}, nil
}

// checkPrivate refuses a directory that is not this user's own, or that
// others can write: a planted directory could redirect the socket.
func checkPrivate(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s must be a directory owned by uid %d and writable only by it", p, os.Geteuid())
	}
	return nil
}

// CheckName returns nil for a valid session name.
func CheckName(name string) error {
	ok := len(name) >= 1 && len(name) <= 64
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || (i > 0 && (c == '.' || c == '_' || c == '-'))
	}
	if !ok {
		return fmt.Errorf("%w %q: use 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit", ErrBadName, name)
	}
	return nil
}

// SocketPath is the socket of session name.
func (d *Dir) SocketPath(name string) string { return filepath.Join(d.path, name, "sock") }

func (d *Dir) sessionDir(name string) string { return filepath.Join(d.path, name) }

// SessionDir is the directory of session name: its lock, socket and info.
// Its supervisor holds the lock; see cordon.SessionLockedDir.
func (d *Dir) SessionDir(name string) string { return d.sessionDir(name) }

// Claim takes name for a new session: it creates DIR/NAME and holds its
// lock until release is called. A name whose supervisor died is reclaimed;
// a running one is ErrExists.
func (d *Dir) Claim(name string) (release func(), err error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	sd := d.sessionDir(name)
	if err := os.Mkdir(sd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := checkPrivate(sd); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(sd, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s (stop it with: cordon session stop %s)", ErrExists, name, name)
	}
	// What a dead supervisor left.
	for _, n := range []string{"sock", "info.json", "info.json.tmp"} {
		_ = os.Remove(filepath.Join(sd, n))
	}
	_ = os.RemoveAll(filepath.Join(sd, "detached"))
	return func() {
		_ = os.RemoveAll(filepath.Join(sd, "detached"))
		for _, n := range []string{"sock", "info.json", "info.json.tmp", "lock"} {
			_ = os.Remove(filepath.Join(sd, n))
		}
		_ = os.Remove(sd)
		f.Close()
	}, nil
}

// WriteInfo records a claimed session's info.
func (d *Dir) WriteInfo(info Info) error {
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	p := filepath.Join(d.sessionDir(info.Name), "info.json")
	if err := os.WriteFile(p+".tmp", data, 0o600); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// List returns the running sessions, sorted by name, and removes what
// supervisors that died left behind.
func (d *Dir) List() ([]Info, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		name := e.Name()
		if CheckName(name) != nil {
			continue
		}
		if !d.alive(name) {
			if release, err := d.Claim(name); err == nil {
				release()
			}
			continue
		}
		var info Info
		if data, err := os.ReadFile(filepath.Join(d.sessionDir(name), "info.json")); err == nil {
			_ = json.Unmarshal(data, &info)
		}
		info.Name = name
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// alive reports whether a supervisor holds name's lock.
func (d *Dir) alive(name string) bool {
	f, err := os.OpenFile(filepath.Join(d.sessionDir(name), "lock"), os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
}
