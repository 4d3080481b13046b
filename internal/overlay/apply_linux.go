package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
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
// system is synced, and then each is renamed over its name (a new file
// never over one the host made meanwhile), and the file system is synced
// again: a crash leaves every file whole, old or new (and perhaps a
// ".cordon-apply-*" temporary file). A parent that is a symlink on the
// host is not written through. The overlay stays, with its manifest moved on to what was
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
	if err := a.run(changes, m); err != nil {
		return nil, fmt.Errorf("apply overlay %s: %w", o.Name, err)
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
		var fi fs.FileInfo
		has := false
		if !c.hostless {
			var err error
			fi, err = os.Lstat(filepath.Join(o.Workspace, c.Path))
			has = err == nil
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				return fmt.Errorf("apply overlay %s: %w", o.Name, err)
			}
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
