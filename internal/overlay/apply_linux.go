package overlay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// ApplyOptions say what Apply may land.
type ApplyOptions struct {
	// Rules are the deny and protect entries (RulesOf the sandbox).
	Rules Rules
	// AllowProtected lands changes to protect paths too (never to deny
	// paths).
	AllowProtected bool
}

// Apply lands the overlay's changes on the host workspace, or none of
// them: it refuses (ConflictError) when the host changed, since the
// overlay started, a path the overlay changes, and (ProtectedError) every
// change to a deny path, and to a protect path without AllowProtected.
// Each file is written to a temporary file in its own directory, the file
// system is synced, and then each is renamed over its name: a crash
// leaves every file whole, old or new (and perhaps a ".cordon-apply-*"
// temporary file). A parent that is a symlink on the host is not written
// through. The overlay stays, with its manifest moved on to what was
// applied, so its diff is empty until the next run.
func (o *Overlay) Apply(opts ApplyOptions) ([]Change, error) {
	release, err := o.Lock()
	if err != nil {
		return nil, err
	}
	defer release()
	changes, err := o.Changes()
	if err != nil {
		return nil, err
	}
	if err := o.checkProtected(changes, opts); err != nil {
		return nil, err
	}
	m, err := o.loadManifest()
	if err != nil {
		return nil, err
	}
	if err := o.checkConflicts(changes, m); err != nil {
		return nil, err
	}
	a, err := newApplier(o)
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := a.run(changes); err != nil {
		return nil, fmt.Errorf("apply overlay %s: %w", o.Name, err)
	}
	for _, c := range changes {
		if fi, err := os.Lstat(filepath.Join(o.Workspace, c.Path)); err == nil {
			m[c.Path] = stateOf(fi)
		} else {
			delete(m, c.Path)
		}
	}
	return changes, o.saveManifest(m)
}

func (o *Overlay) checkProtected(changes []Change, opts ApplyOptions) error {
	e := &ProtectedError{Overlay: o.Name, Liftable: true}
	for _, c := range changes {
		p := filepath.Join(o.Workspace, c.Path)
		rule, deny := opts.Rules.refuse(p)
		if rule == "" || (!deny && opts.AllowProtected) {
			continue
		}
		if deny {
			e.Liftable = false
		}
		e.Refused = append(e.Refused, Refusal{Path: p, Rule: rule})
	}
	if !opts.AllowProtected {
		// The repository rules are protect rules: --allow-protected
		// lifts them too.
		e.Refused = append(e.Refused, o.gitRefusals(changes, opts.Rules)...)
	}
	if len(e.Refused) > 0 {
		return e
	}
	return nil
}

// checkConflicts refuses every change whose host path is not as the
// manifest recorded it. Directories are compared by kind only (their
// times move with every entry made in them), and a directory the overlay
// removes must hold nothing the overlay does not remove too.
func (o *Overlay) checkConflicts(changes []Change, m Manifest) error {
	deleted := map[string]bool{}
	for _, c := range changes {
		if c.Kind == Deleted {
			deleted[c.Path] = true
		}
	}
	e := &ConflictError{Overlay: o.Name}
	seen := map[string]bool{}
	conflict := func(p string) {
		if !seen[p] {
			seen[p] = true
			e.Paths = append(e.Paths, filepath.Join(o.Workspace, p))
		}
	}
	for _, c := range changes {
		old, had := m[c.Path]
		fi, err := os.Lstat(filepath.Join(o.Workspace, c.Path))
		has := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("apply overlay %s: %w", o.Name, err)
		}
		switch {
		case has && fi.IsDir() && (!had || fs.FileMode(old.Mode)&fs.ModeType == fs.ModeDir || old.Mode&syscall.S_IFMT == syscall.S_IFDIR):
			if c.Kind == Deleted {
				names, _ := os.ReadDir(filepath.Join(o.Workspace, c.Path))
				for _, n := range names {
					if !deleted[path.Join(c.Path, n.Name())] {
						conflict(path.Join(c.Path, n.Name()))
					}
				}
			}
		case had != has:
			conflict(c.Path)
		case has && stateOf(fi) != old:
			conflict(c.Path)
		}
	}
	if len(e.Paths) > 0 {
		return e
	}
	return nil
}

// applier writes changes under the workspace through directory
// descriptors opened one component at a time with O_NOFOLLOW.
type applier struct {
	o     *Overlay
	root  int
	dirs  map[string]int
	temps []temp
}

type temp struct {
	dir        int
	name, dest string
}

func newApplier(o *Overlay) (*applier, error) {
	fd, err := unix.Open(o.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("apply overlay %s: open %s: %w", o.Name, o.Workspace, err)
	}
	return &applier{o: o, root: fd, dirs: map[string]int{"": fd}}, nil
}

func (a *applier) close() {
	for _, t := range a.temps {
		_ = unix.Unlinkat(t.dir, t.name, 0)
	}
	for _, fd := range a.dirs {
		unix.Close(fd)
	}
}

// dir opens the host directory rel (slash path), making what is missing
// with the overlay's modes; a component that is a symlink or not a
// directory is refused.
func (a *applier) dir(rel string) (int, error) {
	if fd, ok := a.dirs[rel]; ok {
		return fd, nil
	}
	parent, name := path.Split(rel)
	pfd, err := a.dir(path.Clean("/" + parent)[1:])
	if err != nil {
		return -1, err
	}
	open := func() (int, error) {
		return unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	if errors.Is(err, unix.ENOENT) {
		perm := uint32(0o755)
		if fi, serr := os.Lstat(filepath.Join(a.o.Upper(), rel)); serr == nil {
			perm = uint32(fi.Mode().Perm())
		}
		if err = unix.Mkdirat(pfd, name, perm); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = open()
		}
	}
	if err != nil {
		return -1, fmt.Errorf("%s: not a directory on the host (a symlink is not written through): %w", filepath.Join(a.o.Workspace, rel), err)
	}
	a.dirs[rel] = fd
	return fd, nil
}

func (a *applier) run(changes []Change) error {
	// Every new file is written to a temporary file first; none is
	// renamed before all are on disk.
	for _, c := range changes {
		if c.Kind == Deleted || c.Dir() {
			continue
		}
		if err := a.stage(c); err != nil {
			return err
		}
	}
	if err := unix.Syncfs(a.root); err != nil && !errors.Is(err, unix.EBADF) {
		return fmt.Errorf("sync: %w", err)
	}
	byDest := map[string]temp{}
	for _, t := range a.temps {
		byDest[t.dest] = t
	}
	// Deletions first, what a directory holds before it; then the rest,
	// a directory before what it holds.
	for i := len(changes) - 1; i >= 0; i-- {
		if changes[i].Kind == Deleted {
			if err := a.land(changes[i], byDest); err != nil {
				return err
			}
		}
	}
	for _, c := range changes {
		if c.Kind != Deleted {
			if err := a.land(c, byDest); err != nil {
				return err
			}
		}
	}
	a.temps = nil
	for _, fd := range a.dirs {
		if d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			_ = unix.Fsync(d)
			unix.Close(d)
		}
	}
	return nil
}

// stage writes c's new content to a temporary file beside its name.
func (a *applier) stage(c Change) error {
	parent, name := path.Split(c.Path)
	dfd, err := a.dir(path.Clean("/" + parent)[1:])
	if err != nil {
		return err
	}
	tmp := ".cordon-apply-" + randHex() + "-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	src := filepath.Join(a.o.Upper(), c.Path)
	if c.NewMode == modeSymlink {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := unix.Symlinkat(target, dfd, tmp); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(a.o.Workspace, c.Path), err)
		}
		a.temps = append(a.temps, temp{dfd, tmp, c.Path})
		return nil
	}
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Openat(dfd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(a.o.Workspace, c.Path), err)
	}
	a.temps = append(a.temps, temp{dfd, tmp, c.Path})
	out := os.NewFile(uintptr(fd), tmp)
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(a.o.Workspace, c.Path), err)
	}
	// Set-id bits are never landed, as the broker never lets a run set them.
	return out.Chmod(c.Perm & fs.ModePerm)
}

// land renames c's temporary file over its name, makes its directory, or
// removes its host path.
func (a *applier) land(c Change, byDest map[string]temp) error {
	parent, name := path.Split(c.Path)
	dfd, err := a.dir(path.Clean("/" + parent)[1:])
	if err != nil {
		return err
	}
	host := filepath.Join(a.o.Workspace, c.Path)
	switch {
	case c.Kind == Deleted && c.Dir():
		err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		if fd, ok := a.dirs[c.Path]; ok {
			unix.Close(fd)
			delete(a.dirs, c.Path)
		}
	case c.Kind == Deleted:
		err = unix.Unlinkat(dfd, name, 0)
	case c.Dir():
		_, err = a.dir(c.Path)
	default:
		t := byDest[c.Path]
		err = unix.Renameat(t.dir, t.name, dfd, name)
	}
	if err != nil && !(c.Kind == Deleted && errors.Is(err, unix.ENOENT)) {
		return fmt.Errorf("%s: %w", host, err)
	}
	return nil
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
