package overlay

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/cordon-run/cordon/mounts/decide"
)

// view is a decide.Dir on one directory of the workspace as it would be
// after the apply (the overlay's upper entry, else the host's, a whiteout
// hiding it), or as it is on the host (upper ""). Only Lstat is needed by
// the shape test (decide.Shaped).
type view struct {
	upper, lower string
}

func (v view) Lstat(name string) (decide.Entry, error) {
	if v.upper != "" {
		if fi, err := os.Lstat(filepath.Join(v.upper, name)); err == nil {
			if whiteout(fi) {
				return decide.Entry{}, fs.ErrNotExist
			}
			return decide.Entry{Type: fi.Mode().Type()}, nil
		}
	}
	fi, err := os.Lstat(filepath.Join(v.lower, name))
	if err != nil {
		return decide.Entry{}, err
	}
	return decide.Entry{Type: fi.Mode().Type()}, nil
}

func (v view) Names(string) ([]string, error) { return nil, errors.ErrUnsupported }
func (v view) ReadFile(string, int64) ([]byte, uint32, error) {
	return nil, 0, errors.ErrUnsupported
}
func (v view) Parent() (decide.Dir, error) { return nil, errors.ErrUnsupported }

// gitRefusals are the changes the repository rules of mounts/decide
// refuse, as the broker would have in a direct run: a ".git" file whose
// gitdir leads where no rule guards hooks and config (decide.GitFile), and
// a new repository shape (HEAD, objects and refs) in a directory not
// named .git, which git would take for a bare repository and read a
// config and hooks from (a new .git directory's config and hooks are
// protect paths already).
func (o *Overlay) gitRefusals(changes []Change, r Rules) []Refusal {
	var out []Refusal
	shapes := map[string]bool{}
	rules := decide.Rules{Refuse: func(p string) string { s, _ := r.refuse(p); return s }}
	for _, c := range changes {
		if c.Kind == Deleted {
			continue
		}
		host := filepath.Join(o.Workspace, c.Path)
		base, dir := path.Base(c.Path), path.Dir(c.Path)
		if base == ".git" && c.NewMode != modeDir {
			data, err := o.side(c.Path, true)
			if err == nil {
				err = decide.GitFile(rules, host, data)
			}
			if err != nil {
				out = append(out, Refusal{Path: host, Rule: "protect (a .git file: " + err.Error() + ")"})
			}
		}
		if c.Kind != Added || path.Base(dir) == ".git" || shapes[dir] || !decide.Relevant(host) {
			continue
		}
		after := view{upper: filepath.Join(o.Upper(), dir), lower: filepath.Join(o.Workspace, dir)}
		if decide.Shaped(after) && !decide.Shaped(view{lower: filepath.Join(o.Workspace, dir)}) {
			shapes[dir] = true
			out = append(out, Refusal{Path: filepath.Join(o.Workspace, dir), Rule: decide.ShapeRule})
		}
	}
	return out
}
