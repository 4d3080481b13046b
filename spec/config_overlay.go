package spec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Workspace modes (config key sandbox.workspace_mode).
const (
	// WorkspaceDirect writes the host workspace as commands run (the
	// default).
	WorkspaceDirect = "direct"
	// WorkspaceOverlay runs every command of the sandbox copy-on-write in
	// one overlay of the workspace (Sandbox.OverlayName).
	WorkspaceOverlay = "overlay"
)

// overlayNameRE is an overlay name, as internal/overlay stores it: a
// directory name in the store. It is compiled on first use: its {0,63}
// is most of this package's init, which every start of the binary paid
// (cordon-oci five times a container).
var overlayNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// ValidOverlayName reports whether name is a valid overlay name: 1 to 64
// letters, digits, '.', '_' or '-', starting with a letter or digit.
func ValidOverlayName(name string) bool { return overlayNameRE().MatchString(name) }

// DefaultOverlayName is the overlay a workspace_mode: overlay config with
// no overlay key uses: the workspace folder's name, as a user would name
// it, with what a name cannot hold made '-'.
func DefaultOverlayName(root string) string {
	var b strings.Builder
	for _, r := range filepath.Base(root) {
		switch {
		case r < 128 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimRight(strings.TrimLeft(b.String(), "._-"), "-")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		return "workspace"
	}
	return name
}

// workspaceMode decodes sandbox.workspace_mode and sandbox.overlay into
// sb.OverlayName; it runs after root and readonly.
func (d *decoder) workspaceMode(f map[string]*yaml.Node, sb *Sandbox, rootOK bool) {
	const modeField, nameField = "sandbox.workspace_mode", "sandbox.overlay"
	mode := WorkspaceDirect
	if v := f["workspace_mode"]; !isNull(v) {
		s, ok := d.str(v, modeField)
		if !ok {
			return
		}
		mode = s
		if s != WorkspaceDirect && s != WorkspaceOverlay {
			d.fail(modeField, v.Line, fmt.Sprintf("%q is not a workspace mode", s),
				"give direct (the default: commands write the workspace) or overlay (they write a copy-on-write overlay that cordon apply lands)")
			mode = ""
		}
	}
	var name string
	v := f["overlay"]
	if !isNull(v) {
		s, ok := d.str(v, nameField)
		switch {
		case !ok:
			return
		case !ValidOverlayName(s):
			d.fail(nameField, v.Line, fmt.Sprintf("%q is not an overlay name", s), "use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
			return
		}
		name = s
	}
	if mode != WorkspaceOverlay {
		if name != "" && mode != "" {
			d.fail(nameField, v.Line, fmt.Sprintf("overlay %s is set but workspace_mode is %s", name, mode),
				"add workspace_mode: overlay to the sandbox section, or remove overlay")
		}
		return
	}
	line := d.line("sandbox")
	if mv := f["workspace_mode"]; mv != nil {
		line = mv.Line
	}
	switch {
	case sb.Readonly:
		d.fail(modeField, line, "overlay with readonly: true: a read-only workspace has nothing to overlay",
			"remove readonly, or give workspace_mode: direct")
	case !rootOK || sb.Root == "":
		// root's own problem is reported already.
	case name == "":
		sb.OverlayName = DefaultOverlayName(sb.Root)
	default:
		sb.OverlayName = name
	}
}
