package overlay

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrName is a name that is not a valid overlay name.
	ErrName = errors.New("invalid overlay name")
	// ErrNotFound is an overlay that does not exist.
	ErrNotFound = errors.New("no such overlay")
	// ErrInUse is an overlay a run or session is using now.
	ErrInUse = errors.New("overlay in use")
	// ErrWorkspace is a name already used by an overlay of another workspace.
	ErrWorkspace = errors.New("overlay belongs to another workspace")
	// ErrConflict is an apply refused because the host changed a path the
	// overlay changes too.
	ErrConflict = errors.New("overlay conflicts with the host workspace")
	// ErrProtected is an apply refused because the overlay changes a
	// deny or protect path.
	ErrProtected = errors.New("overlay changes protected paths")
	// ErrStore is a store directory cordon must not use.
	ErrStore = errors.New("unsafe overlay store")
	// ErrUnsupported is overlay mode where this platform has no overlayfs.
	ErrUnsupported = errors.New("overlay workspaces need Linux overlayfs")
)

// ConflictError is an apply refused because the host changed, since the
// overlay started, paths the overlay changes too. Nothing was applied.
type ConflictError struct {
	// Overlay is the overlay's name.
	Overlay string
	// Paths are the host paths that changed on both sides.
	Paths []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("cannot apply overlay %s: the host changed %s since the overlay started, and the overlay changes it too; "+
		"nothing was applied; fix: reconcile by hand (cordon diff %s), or discard the overlay (cordon discard %s)",
		e.Overlay, strings.Join(e.Paths, ", "), e.Overlay, e.Overlay)
}

// Is matches ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Refusal is one change Apply refuses: its host path and the rule.
type Refusal struct {
	// Path is the host path.
	Path string `json:"path"`
	// Rule is "deny PATH" or "protect PATH", the entry that forbids it.
	Rule string `json:"rule"`
}

// ProtectedError is an apply refused because the overlay changes deny or
// protect paths. Nothing was applied.
type ProtectedError struct {
	// Overlay is the overlay's name.
	Overlay string
	// Refused are the changes refused, each with its rule.
	Refused []Refusal
	// Liftable says whether --allow-protected would apply them (false
	// when a deny path is among them: no flag lifts deny).
	Liftable bool
}

func (e *ProtectedError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		parts[i] = r.Path + " (" + r.Rule + ")"
	}
	fix := "review them (cordon diff " + e.Overlay + ") and apply with --allow-protected, or discard the overlay"
	if !e.Liftable {
		fix = "an overlay cannot write a deny path; discard the overlay (cordon discard " + e.Overlay + ")"
	}
	return fmt.Sprintf("cannot apply overlay %s: it changes protected paths %s; nothing was applied; fix: %s",
		e.Overlay, strings.Join(parts, ", "), fix)
}

// Is matches ErrProtected.
func (e *ProtectedError) Is(target error) bool { return target == ErrProtected }
