package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Kind is what a change does to a path.
type Kind string

// The kinds of change.
const (
	Added    Kind = "added"
	Modified Kind = "modified"
	Deleted  Kind = "deleted"
)

// Change is one path the overlay changes, relative to the workspace.
type Change struct {
	// Path is the slash path relative to the workspace.
	Path string `json:"path"`
	// Kind says whether it is added, modified or deleted.
	Kind Kind `json:"kind"`
	// OldMode and NewMode are git's modes (0o100644, 0o100755,
	// 0o120000, 0o40000 for a directory), 0 where there is none.
	OldMode uint32 `json:"old_mode,omitempty"`
	NewMode uint32 `json:"new_mode,omitempty"`
	// Perm is the new file's permission bits (set-id bits dropped).
	Perm fs.FileMode `json:"-"`
	// Binary says that either side is not text (it holds a NUL byte).
	Binary bool `json:"binary,omitempty"`
	// Insertions and Deletions count lines (WriteDiff fills them).
	Insertions int `json:"insertions,omitempty"`
	Deletions  int `json:"deletions,omitempty"`
	// hostless says that the host had no directory at the path's parent
	// when the change was read: the host has no entry at the path
	// either, and Apply need not look.
	hostless bool
}

// Dir reports whether the change is to a directory.
func (c Change) Dir() bool {
	return c.NewMode == modeDir || (c.NewMode == 0 && c.OldMode == modeDir)
}

const (
	modeDir     = 0o40000
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
)

// gitMode is git's mode of fi, 0 for what git does not keep.
func gitMode(fi fs.FileInfo) uint32 {
	switch m := fi.Mode(); {
	case m.IsDir():
		return modeDir
	case m&fs.ModeSymlink != 0:
		return modeSymlink
	case m.IsRegular() && m&0o100 != 0:
		return modeExec
	case m.IsRegular():
		return modeFile
	}
	return 0
}

// whiteout reports whether fi is an overlayfs whiteout: a character
// device 0/0 that hides the lower path of its name.
func whiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// Changes reads the overlay's upper layer against the host workspace as
// it is now, sorted by path (see less). A file copied
// up but left as it was (same bytes, same mode) is no change. The lower
// side is looked up one component at a time, never through a symlink.
func (o *Overlay) Changes() ([]Change, error) {
	w := walker{upper: o.Upper(), lower: o.Workspace}
	if err := w.dir("", true); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", o.Name, err)
	}
	sort.SliceStable(w.out, func(i, j int) bool { return less(w.out[i], w.out[j]) })
	return w.out, nil
}

// less orders changes by path, one component at a time (so "d/a" comes
// before "d-x", and a directory before what it holds), a deletion before
// an addition at the same path (a type change).
func less(a, b Change) bool {
	if a.Path == b.Path {
		return a.Kind == Deleted && b.Kind != Deleted
	}
	return pathLess(a.Path, b.Path)
}

// pathLess compares slash paths component by component.
func pathLess(a, b string) bool {
	for {
		ai, bi := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if ac != bc {
			return ac < bc
		}
		if ai < 0 || bi < 0 {
			return ai < 0 && bi >= 0
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}

type walker struct {
	upper, lower string
	out          []Change
	// pathsOnly skips what only a diff needs (each new file's mode):
	// below a directory the host does not have, entries are taken by
	// their directory-entry type, with no stat each.
	pathsOnly bool
}

// ChangedPaths returns the paths of the files (not directories) the
// overlay changes, sorted as Changes sorts them: what Changes says, at
// the cost of a directory read for each new directory instead of a stat
// for each new file, for a run's result at its end.
func (o *Overlay) ChangedPaths() ([]string, error) {
	w := walker{upper: o.Upper(), lower: o.Workspace, pathsOnly: true}
	if err := w.dir("", true); err != nil {
		return nil, fmt.Errorf("overlay %s: %w", o.Name, err)
	}
	sort.SliceStable(w.out, func(i, j int) bool { return less(w.out[i], w.out[j]) })
	out := make([]string, 0, len(w.out))
	for _, c := range w.out {
		if !c.Dir() && (len(out) == 0 || out[len(out)-1] != c.Path) {
			out = append(out, c.Path)
		}
	}
	return out, nil
}

// newDir records the entries of the upper directory rel that the host
// does not have, by their directory-entry types: all are additions (a
// whiteout there hides nothing).
func (w *walker) newDir(rel string, ents []fs.DirEntry) error {
	for _, e := range ents {
		p := join(rel, e.Name())
		switch t := e.Type(); {
		case t.IsDir():
			w.out = append(w.out, Change{Path: p, Kind: Added, NewMode: modeDir, hostless: true})
			sub, err := os.ReadDir(filepath.Join(w.upper, p))
			if err != nil {
				return err
			}
			if err := w.newDir(p, sub); err != nil {
				return err
			}
		case t&fs.ModeCharDevice != 0:
		case t.IsRegular():
			w.out = append(w.out, Change{Path: p, Kind: Added, NewMode: modeFile, hostless: true})
		case t&fs.ModeSymlink != 0:
			w.out = append(w.out, Change{Path: p, Kind: Added, NewMode: modeSymlink, hostless: true})
		default:
			return fmt.Errorf("%s: a %s in the overlay cannot be applied: only files, symlinks and directories can", p, t)
		}
	}
	return nil
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// roots are the upper and the host directory of one directory of the
// walk, open: each entry is looked up in them by its name alone, not by
// a path walked from the root. low is nil where the host has no
// directory there.
type roots struct {
	up, low *os.Root
}

func (r roots) close() {
	r.up.Close()
	if r.low != nil {
		r.low.Close()
	}
}

// openRoots opens the upper directory rel and, when lowerDir says rel is
// a real directory on the host, the host's.
func (w *walker) openRoots(rel string, lowerDir bool) (roots, error) {
	up, err := os.OpenRoot(filepath.Join(w.upper, rel))
	if err != nil {
		return roots{}, err
	}
	r := roots{up: up}
	if lowerDir {
		r.low, err = os.OpenRoot(filepath.Join(w.lower, rel))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			r.low, err = nil, nil
		}
		if err != nil {
			up.Close()
			return roots{}, err
		}
	}
	return r, nil
}

// lowerStat is the host's entry name in r, nil when there is none.
func (r roots) lowerStat(name string) (fs.FileInfo, error) {
	if r.low == nil {
		return nil, nil
	}
	fi, err := r.low.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	return fi, err
}

// dir reads the upper directory rel; lowerDir says rel is a real
// directory on the host, so its entries may be looked up there.
func (w *walker) dir(rel string, lowerDir bool) error {
	ents, err := os.ReadDir(filepath.Join(w.upper, rel))
	if err != nil {
		return err
	}
	if w.pathsOnly && !lowerDir {
		return w.newDir(rel, ents)
	}
	r, err := w.openRoots(rel, lowerDir)
	if err != nil {
		return err
	}
	defer r.close()
	inUpper := make(map[string]bool, len(ents))
	for _, e := range ents {
		inUpper[e.Name()] = true
		if err := w.entry(rel, e.Name(), r); err != nil {
			return err
		}
	}
	if rel != "" && r.low != nil && opaque(filepath.Join(w.upper, rel)) {
		// An opaque directory replaces the host's: what it does not
		// hold is deleted.
		lents, err := os.ReadDir(filepath.Join(w.lower, rel))
		if err != nil {
			return err
		}
		for _, e := range lents {
			if !inUpper[e.Name()] {
				if err := w.deleteTree(join(rel, e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (w *walker) entry(rel, name string, r roots) error {
	p := join(rel, name)
	up, err := r.up.Lstat(name)
	if err != nil {
		return err
	}
	low, err := r.lowerStat(name)
	if err != nil {
		return err
	}
	if whiteout(up) {
		if low != nil {
			return w.deleteTree(p)
		}
		return nil
	}
	newMode := gitMode(up)
	if newMode == 0 {
		return fmt.Errorf("%s: a %s in the overlay cannot be applied: only files, symlinks and directories can", p, up.Mode().Type())
	}
	if low != nil && gitMode(low) != newMode && (low.IsDir() || up.IsDir() || gitMode(low) == modeSymlink || newMode == modeSymlink) {
		// A type change: the host's entry goes, the overlay's comes.
		if err := w.deleteTree(p); err != nil {
			return err
		}
		low = nil
	}
	c := Change{Path: p, Kind: Added, NewMode: newMode, Perm: up.Mode().Perm(), hostless: r.low == nil}
	if up.IsDir() {
		if low == nil {
			w.out = append(w.out, c)
		}
		return w.dir(p, low != nil)
	}
	if low != nil {
		c.Kind, c.OldMode = Modified, gitMode(low)
		same, err := w.same(p, up, low)
		if err != nil {
			return err
		}
		if same && low.Mode().Perm() == up.Mode().Perm() {
			return nil
		}
	}
	w.out = append(w.out, c)
	return nil
}

// same reports whether the upper and lower entries at p hold the same
// bytes (a symlink's are its target).
func (w *walker) same(p string, up, low fs.FileInfo) (bool, error) {
	if up.Size() != low.Size() {
		return false, nil
	}
	a, err := readEntry(filepath.Join(w.upper, p), up)
	if err != nil {
		return false, err
	}
	b, err := readEntry(filepath.Join(w.lower, p), low)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// deleteTree records the deletion of the host's rel and, for a
// directory, of everything below it.
func (w *walker) deleteTree(rel string) error {
	return filepath.WalkDir(filepath.Join(w.lower, rel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(w.lower, p)
		w.out = append(w.out, Change{Path: filepath.ToSlash(r), Kind: Deleted, OldMode: gitMode(fi)})
		return nil
	})
}

// readEntry reads a regular file's bytes or a symlink's target.
func readEntry(p string, fi fs.FileInfo) ([]byte, error) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		return []byte(t), err
	}
	if fi.IsDir() {
		return nil, nil
	}
	return os.ReadFile(p)
}
