//go:build !linux

package overlay

// ApplyOptions say what Apply may land.
type ApplyOptions struct {
	// Rules are the deny and protect entries (RulesOf the sandbox).
	Rules Rules
	// AllowProtected lands changes to protect paths too.
	AllowProtected bool
}

// Apply returns ErrUnsupported: overlays are Linux only.
func (o *Overlay) Apply(ApplyOptions) ([]Change, error) { return nil, ErrUnsupported }
