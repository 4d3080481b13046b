package cordon

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cordon-run/cordon/internal/overlay"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Overlay errors, for errors.Is.
var (
	// ErrOverlayConflict is an apply refused because the host changed a
	// path the overlay changes too (*overlay.ConflictError names them).
	ErrOverlayConflict = overlay.ErrConflict
	// ErrOverlayProtected is an apply refused because the overlay changes
	// deny or protect paths (*overlay.ProtectedError names them).
	ErrOverlayProtected = overlay.ErrProtected
	// ErrOverlayInUse is an overlay another run, session or apply holds.
	ErrOverlayInUse = overlay.ErrInUse
	// ErrOverlayNotFound is an overlay that does not exist.
	ErrOverlayNotFound = overlay.ErrNotFound
)

// OverlayStore opens this user's overlay store (overlay.DefaultDir).
func OverlayStore() (*overlay.Store, error) { return overlay.Open(overlay.DefaultDir()) }

// CheckOverlay refuses, before anything runs, what startOverlay would
// refuse at once: a system with no overlayfs and a name that is not valid.
// A front end that serves many calls (cordon mcp) checks it first.
func CheckOverlay(name string) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: overlay %s: %w; fix: run without --overlay and workspace_mode: overlay (direct mode) on this system", spec.ErrUnenforceable, name, overlay.ErrUnsupported)
	}
	if !spec.ValidOverlayName(name) {
		return fmt.Errorf("%w: %q; fix: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", overlay.ErrName, name)
	}
	return nil
}

// startOverlay takes the overlay name of sb's workspace, locked, and
// returns the sandbox that mounts it: the same sandbox with the layers set
// and without its protect entries inside the workspace, which hold at
// apply instead (ApplyOverlay): a write in an overlay reaches no host
// file, so the sandbox may change what apply will then refuse to land.
func startOverlay(sb *spec.Sandbox, name string) (*spec.Sandbox, *overlay.Overlay, func(), error) {
	if runtime.GOOS != "linux" {
		// Seatbelt has no overlay: a run would write the workspace itself.
		return nil, nil, nil, fmt.Errorf("%w: overlay %s: %w; fix: run without --overlay (direct mode) on this system", spec.ErrUnenforceable, name, overlay.ErrUnsupported)
	}
	if sb.Root == "" {
		return nil, nil, nil, fmt.Errorf("%w: overlay %s: the sandbox has no workspace to overlay; fix: set sandbox.root", spec.ErrUnenforceable, name)
	}
	if sb.Readonly {
		return nil, nil, nil, fmt.Errorf("%w: overlay %s: the workspace is read-only (readonly: true), so there is nothing to overlay; fix: drop --overlay or --readonly", spec.ErrUnenforceable, name)
	}
	st, err := OverlayStore()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := storeHidden(sb, st.Dir); err != nil {
		return nil, nil, nil, err
	}
	o, release, err := st.Start(name, sb.Root)
	if err != nil {
		return nil, nil, nil, err
	}
	c := sb.Clone()
	c.Overlay = &spec.Overlay{Name: o.Name, Upper: o.Upper(), Work: o.Work()}
	c.Protect = nil
	for _, p := range sb.Protect {
		if !within(sb.Root, p) {
			c.Protect = append(c.Protect, p)
		}
	}
	return c, o, release, nil
}

// storeHidden refuses a sandbox that would show the overlay store: a
// command that could write another overlay's upper layer would write what
// that overlay's apply lands.
func storeHidden(sb *spec.Sandbox, store string) error {
	real, err := filepath.EvalSymlinks(store)
	if err != nil {
		real = store
	}
	sources := []string{sb.Root}
	for _, m := range sb.Mounts {
		sources = append(sources, m.Source)
	}
	for _, src := range sources {
		r, err := filepath.EvalSymlinks(src)
		if err != nil {
			r = src
		}
		if within(r, real) || within(real, r) {
			return fmt.Errorf("%w: the mount of %s would show the overlay store %s to the sandbox; fix: mount a narrower directory, or set CORDON_OVERLAY_DIR elsewhere",
				spec.ErrUnenforceable, src, store)
		}
	}
	return nil
}

func within(dir, p string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// overlayPaths counts the workspace files the overlay changes and lists
// the first runner.MaxOverlayChanges, for the result; a failure to read
// them leaves both empty.
func overlayPaths(o *overlay.Overlay) (int, []string) {
	paths, err := o.ChangedPaths()
	if err != nil {
		return 0, nil
	}
	return len(paths), paths[:min(len(paths), runner.MaxOverlayChanges)]
}

// ApplyOverlay lands the overlay name on its workspace, refusing (and
// landing nothing) on a conflict with the host (ErrOverlayConflict) and on
// every change to a deny path, or to a protect path without
// allowProtected (ErrOverlayProtected). The deny and protect entries are
// this sandbox's, whose workspace the overlay must be of.
func (s *Sandbox) ApplyOverlay(name string, allowProtected bool) ([]overlay.Change, error) {
	st, err := OverlayStore()
	if err != nil {
		return nil, err
	}
	o, err := st.Get(name)
	if err != nil {
		return nil, err
	}
	if o.Workspace != s.sb.Root {
		return nil, fmt.Errorf("%w: %s is an overlay of %s, but this project's workspace is %s; fix: run cordon apply from %s (or with its --config)",
			overlay.ErrWorkspace, name, o.Workspace, s.sb.Root, o.Workspace)
	}
	return o.Apply(overlay.ApplyOptions{Rules: overlay.RulesOf(s.sb), AllowProtected: allowProtected})
}

// overlayStartResult types a run that could not take its overlay: one held
// by another run, session or apply is its own outcome (overlay_in_use,
// exit 125: nothing ran, and waiting or another name fixes it); a bad name
// or an overlay of another workspace is the invocation's fault
// (config_error, exit 2); the rest is a setup error.
func overlayStartResult(name string, err error) Result {
	res := setupResult(err)
	switch {
	case errors.Is(err, overlay.ErrInUse):
		res.FailureType = FailureOverlayInUse
	case errors.Is(err, overlay.ErrName), errors.Is(err, overlay.ErrWorkspace):
		res.ExitCode, res.FailureType = 2, FailureConfigError // as cmd/cordon's exitConfig
	}
	res.Overlay = name
	return res
}
