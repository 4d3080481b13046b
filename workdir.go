package cordon

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkDir is the directory a command started from the caller's directory
// cwd (a host path) runs in, as `cordon run` chooses it: cwd itself when
// the sandbox shows that host directory at the same path (the workspace,
// or a mount whose target is its source), as one would pass docker's -w or
// bwrap's --chdir; otherwise the workspace root, or / without one. inside
// reports which.
func (s *Sandbox) WorkDir(cwd string) (dir string, inside bool) {
	if filepath.IsAbs(cwd) {
		cwd = filepath.Clean(cwd)
		if host, err := s.table.Resolve(cwd); err == nil && sameFile(host, cwd) && isDir(host) {
			return cwd, true
		}
	}
	if s.sb.Root != "" {
		return s.sb.Root, false
	}
	return "/", false
}

// CheckDir checks a working directory the caller asked for (`--cwd`): a
// sandbox path, a relative one taken under the workspace root, that the
// sandbox shows as a directory (or the sandbox's own /tmp). It returns the
// absolute path, or an error that names what IS readable.
func (s *Sandbox) CheckDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		if s.sb.Root == "" {
			return "", fmt.Errorf("%s is relative and this sandbox has no workspace; give an absolute sandbox path", dir)
		}
		dir = filepath.Join(s.sb.Root, dir)
	}
	dir = filepath.Clean(dir)
	if s.table.SyntheticDir(dir) == dir {
		return dir, nil // /tmp, /proc, /dev: made up by the sandbox, always there
	}
	host, err := s.table.Resolve(dir)
	if err != nil {
		return "", err
	}
	if !isDir(host) {
		return "", fmt.Errorf("%s is not a directory (host path %s)", dir, host)
	}
	return dir, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// sameFile reports whether a and b name the same file (through symbolic
// links such as a /tmp that is one).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
