package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// validName is an overlay name: it is a directory name in the store, so
// no slash, no leading dot, and short.
// Compiled on first use: its {0,63} makes a large program, and compiling
// it at package init cost every start of the binary (the init too) 0.3 ms.
var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// Store is the directory holding one user's overlays, one sub-directory
// per name.
type Store struct {
	// Dir is the store directory.
	Dir string
}

// Meta is what the store records of an overlay when it starts.
type Meta struct {
	// Name is the overlay's name.
	Name string `json:"name"`
	// Workspace is the host workspace, the lower layer.
	Workspace string `json:"workspace"`
	// Created is when the overlay started.
	Created time.Time `json:"created"`
}

// Overlay is one overlay of the store.
type Overlay struct {
	Meta
	dir string
}

// Upper is the overlay's upper layer.
func (o *Overlay) Upper() string { return filepath.Join(o.dir, "upper") }

// Work is overlayfs' work directory of the overlay.
func (o *Overlay) Work() string { return filepath.Join(o.dir, "work") }

// DefaultDir is the store of this user: $CORDON_OVERLAY_DIR, else
// /var/lib/cordon/overlays for root, else $XDG_STATE_HOME/cordon/overlays
// or ~/.local/state/cordon/overlays. Like cordon's state directory it is
// per user and outside every workspace, but it survives a reboot: an
// overlay is work not yet applied.
func DefaultDir() string {
	if d := os.Getenv("CORDON_OVERLAY_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/cordon/overlays"
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "cordon", "overlays")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "cordon", "overlays")
}

// Open opens the store at dir, creating it with mode 0700, and refuses one
// that another user owns or others can write: whoever can write it can
// write into every overlay's upper layer, and so into what apply lands.
func Open(dir string) (*Store, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%w: %q is not absolute; fix: give an absolute CORDON_OVERLAY_DIR", ErrStore, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("overlay store %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("overlay store %s: %w", dir, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s must be a directory owned by uid %d and writable only by it; fix: chmod go-w it, or set CORDON_OVERLAY_DIR",
			ErrStore, dir, os.Geteuid())
	}
	return &Store{Dir: dir}, nil
}

func checkName(name string) error {
	if !validName().MatchString(name) {
		return fmt.Errorf("%w: %q; fix: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrName, name)
	}
	return nil
}

func (s *Store) path(name string) string { return filepath.Join(s.Dir, name) }

// Get returns the overlay name, which must exist.
func (s *Store) Get(name string) (*Overlay, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	dir := s.path(name)
	data, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s (cordon overlays lists them)", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("overlay %s: %w", name, err)
	}
	o := &Overlay{dir: dir}
	if err := json.Unmarshal(data, &o.Meta); err != nil {
		return nil, fmt.Errorf("overlay %s: meta.json: %w", name, err)
	}
	return o, nil
}

// lock takes the store's lock, held while an overlay is made or removed,
// so that two first starts of one name (or a start and a discard) never
// remove each other's half-made directory.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Dir, ".lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("overlay store %s: lock: %w", s.Dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("overlay store %s: lock: %w", s.Dir, err)
	}
	return func() { f.Close() }, nil
}

// Lock takes the overlay's lock, held by one run, session, apply or
// discard at a time: overlayfs leaves two mounts of one upper layer
// undefined. The lock is a flock, so a SIGKILLed holder releases it.
func (o *Overlay) Lock() (release func(), err error) {
	f, err := os.OpenFile(filepath.Join(o.dir, "lock"), os.O_CREATE|os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: lock: %w", o.Name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by another cordon run, session or apply of it (cordon overlays lists the overlays, cordon session ls the sessions); nothing ran; fix: wait for it to end, or give another name (--overlay NAME, or sandbox.overlay in the config)", ErrInUse, o.Name)
		}
		return nil, fmt.Errorf("overlay %s: lock: %w", o.Name, err)
	}
	return func() { f.Close() }, nil
}

// Start returns the overlay name of workspace, locked, creating it (and
// recording the workspace's manifest) when it does not exist yet; an
// existing one continues where its last run stopped. A name another
// workspace's overlay has is refused.
func (s *Store) Start(name, workspace string) (*Overlay, func(), error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	o, err := s.Get(name)
	if errors.Is(err, ErrNotFound) {
		o, err = s.create(name, workspace)
	}
	if err != nil {
		return nil, nil, err
	}
	if o.Workspace != workspace {
		return nil, nil, fmt.Errorf("%w: %s is an overlay of %s, not of %s; fix: use another name, or discard it (cordon discard %s)",
			ErrWorkspace, name, o.Workspace, workspace, name)
	}
	release, err := o.Lock()
	if err != nil {
		return nil, nil, err
	}
	return o, release, nil
}

// create makes the overlay's directory, its manifest and its layers; the
// meta file, written last, says the overlay exists. A directory left
// without it (a crash while creating) is made again.
func (s *Store) create(name, workspace string) (*Overlay, error) {
	if !filepath.IsAbs(workspace) {
		return nil, fmt.Errorf("overlay %s: workspace %q is not absolute", name, workspace)
	}
	if within(s.Dir, workspace) || within(workspace, s.Dir) {
		return nil, fmt.Errorf("%w: the store %s and the workspace %s overlap; fix: set CORDON_OVERLAY_DIR outside the workspace", ErrStore, s.Dir, workspace)
	}
	dir := s.path(name)
	if err := removeTree(dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", name, err)
	}
	o := &Overlay{Meta: Meta{Name: name, Workspace: workspace, Created: time.Now().UTC()}, dir: dir}
	release, err := o.Lock()
	if err != nil {
		return nil, err
	}
	defer release()
	m, err := record(workspace)
	if err != nil {
		return nil, fmt.Errorf("overlay %s: manifest of %s: %w", name, workspace, err)
	}
	if err := o.saveManifest(m); err != nil {
		return nil, err
	}
	for _, d := range []string{o.Upper(), o.Work()} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("overlay %s: %w", name, err)
		}
	}
	data, _ := json.MarshalIndent(o.Meta, "", "  ")
	if err := writeFileSync(filepath.Join(dir, "meta.json"), data); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", name, err)
	}
	return o, nil
}

// List returns the store's overlays, sorted by name.
func (s *Store) List() ([]*Overlay, error) {
	ents, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("overlay store %s: %w", s.Dir, err)
	}
	var out []*Overlay
	for _, e := range ents {
		if !e.IsDir() || checkName(e.Name()) != nil {
			continue
		}
		if o, err := s.Get(e.Name()); err == nil {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Discard removes the overlay name and everything it holds; the host
// workspace is not touched. An overlay in use is refused.
func (s *Store) Discard(name string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	o, err := s.Get(name)
	if err != nil {
		return err
	}
	release, err := o.Lock()
	if err != nil {
		return err
	}
	defer release()
	// The meta file goes first: a crash half-way leaves a directory Get
	// does not show and the next create removes.
	if err := os.Remove(filepath.Join(o.dir, "meta.json")); err != nil {
		return fmt.Errorf("discard %s: %w", name, err)
	}
	return removeTree(o.dir)
}

// Size is the bytes the overlay's upper layer holds.
func (o *Overlay) Size() int64 {
	var n int64
	_ = filepath.WalkDir(o.Upper(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// removeTree removes dir and what it holds, making each directory
// writable and searchable first: overlayfs leaves its work directory's
// "work" with mode 0.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		if err != nil && d != nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
			return nil
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return p == dir || strings.HasPrefix(p, dir+"/")
}
