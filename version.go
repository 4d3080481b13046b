package cordon

import (
	"runtime/debug"
	"strings"
)

// revision is the VCS revision, set by the Makefile's build
// (-ldflags -X) for builds that Go does not stamp itself (-buildvcs=false).
var revision string

// Version is the version of the cordon module in this binary and the VCS
// revision it was built from, as Go records them: "v1.2.3", or
// "(devel) rev 1a2b3c4d5e6f (modified)" for a build from a checkout. It is
// what `cordon version` prints and what the MCP server announces.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	v := bi.Main.Version
	if bi.Main.Path != "github.com/cordon-run/cordon" {
		// A program that imports cordon: report the module it uses.
		for _, d := range bi.Deps {
			if d.Path == "github.com/cordon-run/cordon" {
				v = d.Version
				if d.Replace != nil {
					v += " (replaced by " + d.Replace.Path + ")"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	rev, modified := revision, ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += " rev " + rev[:min(12, len(rev))] + modified
	}
	return v
}
