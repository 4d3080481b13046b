package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// gitdirTarget resolves the gitdir a ".git" file at the resolved sandbox
// path file names, as git and the kernel take it: relative to the file's
// directory, every symbolic link followed and ".." applied after it (the
// walk), never cleaned first. A gitdir with ".." after a name is refused
// (git writes none, and the name could become a link later), and so is one
// that goes through a symbolic link (git writes real paths); one that does
// not exist yet is taken only when every missing place on it is one the
// sandbox can never write (protect or deny), so that no link can appear
// there.
func (t *Table) gitdirTarget(op, orig, file, target string) (string, error) {
	if target == "" || strings.ContainsAny(target, "\n\x00") {
		return "", fmt.Errorf("a gitdir that is not one path")
	}
	if dotDotAfterName(target) {
		return "", fmt.Errorf("a gitdir with \"..\" after a name (%s): git never writes one", target)
	}
	if !strings.HasPrefix(target, "/") {
		target = path.Dir(file) + "/" + target
	}
	r, err := t.walk(op, orig, target, true)
	if err != nil {
		return "", fmt.Errorf("its gitdir %s does not resolve: %w", target, err)
	}
	// With no ".." after a name, the leading ones climb real directories:
	// the lexical form is where the path leads unless a link was followed.
	// git writes real paths, and a link could be turned elsewhere later.
	if path.Clean(target) != r.sandbox {
		return "", fmt.Errorf("its gitdir %s goes through a symlink to %s", target, r.sandbox)
	}
	// The first missing name, from the host's side of the resolution.
	var missing []string
	for s, h := r.sandbox, r.host; s != "/" && s != r.e.Target; s, h = path.Dir(s), path.Dir(h) {
		_, err := os.Lstat(h)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("its gitdir %s: %w", r.sandbox, err)
		}
		missing = append(missing, s)
	}
	for _, q := range missing {
		var pe *PathError
		if err := t.Check(q, true); !errors.As(err, &pe) || !(pe.Err == ErrReadOnly && pe.Rule == RuleProtect || pe.Err == ErrDenied) {
			return "", fmt.Errorf("its gitdir %s does not exist, and %s could still become a symlink", r.sandbox, q)
		}
	}
	return r.sandbox, nil
}

// dotDotAfterName reports whether the path p has ".." after a name
// ("a/..").
func dotDotAfterName(p string) bool {
	named := false
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if named {
				return true
			}
		default:
			named = true
		}
	}
	return false
}
