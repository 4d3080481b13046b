package cordon

import (
	"fmt"
	"path/filepath"

	"github.com/cordon-run/cordon/spec"
)

// Access is the one answer to "may the sandbox read (or write) this
// path?" for both ways in: a command, which the kernel holds to the
// boundary, and the file tools (Files, and the MCP server's read, write
// and list_files), which reach host files only and add the mounts' suffix
// and size rules. `cordon check` prints it.
type Access struct {
	// Commands is nil when a command in the sandbox may; else why not.
	Commands error
	// Tools is nil when the file tools may; else why not.
	Tools error
	// Host is the host path the sandbox path shows, or "" for a path in a
	// directory the sandbox makes up (its private /tmp, /proc, /dev).
	Host string
	// Synthetic is that directory ("/tmp"), or "".
	Synthetic string
}

// Access answers for path (a sandbox path; a relative one is taken under
// the workspace) without recording anything: a question is not a refusal.
func (s *Sandbox) Access(path string, write bool) Access {
	abs := path
	if !filepath.IsAbs(abs) && s.sb.Root != "" {
		abs = filepath.Join(s.sb.Root, abs)
	}
	if d := s.table.SyntheticDir(abs); filepath.IsAbs(abs) && d != "" {
		return Access{
			Commands:  spec.SyntheticUse(d, abs, write),
			Tools:     fmt.Errorf("%s is in the sandbox's own %s, not a host directory, and the file tools reach host files only; use a command", abs, d),
			Synthetic: d,
		}
	}
	t := s.table
	check := t.Check(path, write)
	if check == nil && write {
		// The rules beyond patterns (a repository's shape), decided on
		// the directories as they are, as the broker and Write decide.
		check = t.CheckWrite(path)
	}
	if check != nil {
		return Access{Commands: check, Tools: check}
	}
	var a Access
	if write {
		a.Host, _ = t.ResolveWrite(path)
	} else {
		a.Host, _ = t.Resolve(path)
	}
	// The tools' own rules: the kernel does not know them.
	a.Tools = t.CheckSuffix(path)
	if a.Tools == nil && !write {
		a.Tools = t.CheckSize(path)
	}
	return a
}
