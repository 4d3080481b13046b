package mounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxSymlinks is how many symbolic links one resolution may follow, as the
// Linux kernel's limit; one more is ErrLoop.
const MaxSymlinks = 40

// MaxPathLen is the longest path, in bytes, that resolution accepts, as
// PATH_MAX.
const MaxPathLen = 4096

// resolution is where a sandbox path ends after following every symbolic
// link: a symlink-free sandbox path, its entry and its host path.
type resolution struct {
	// sandbox is the resolved sandbox path; every component of it was seen
	// not to be a symbolic link (or not to exist).
	sandbox string
	// e is the entry that holds sandbox.
	e *Entry
	// rel is sandbox relative to e.Target ("" for the mount root).
	rel string
	// host is e.Source joined with rel.
	host string
	// viaProtect is a protect path that held a symbolic link the walk
	// followed; writes through it are refused.
	viaProtect string
}

// Resolve returns the host path of a sandbox path that the sandbox may read,
// after following symbolic links as the kernel inside the sandbox would. A
// missing file is fine (its host path is returned). Otherwise it returns a
// *PathError matching ErrOutsideSandbox, ErrDenied, ErrLoop or
// ErrInvalidPath.
func (t *Table) Resolve(path string) (string, error) {
	r, err := t.resolve("read", path, false)
	if err != nil {
		return "", err
	}
	return r.host, nil
}

// ResolveWrite returns the host path of a sandbox path that the sandbox may
// write. Beyond Resolve's errors it returns ErrReadOnly for a read-only
// mount or a protect path (on the path or any ancestor, existing or not).
func (t *Table) ResolveWrite(path string) (string, error) {
	r, err := t.resolve("write", path, true)
	if err != nil {
		return "", err
	}
	return r.host, nil
}

// CanRead reports whether the sandbox may read path.
func (t *Table) CanRead(path string) bool { return t.Check(path, false) == nil }

// CanWrite reports whether the sandbox may write path.
func (t *Table) CanWrite(path string) bool { return t.Check(path, true) == nil }

// Check returns nil when the sandbox may read (or, with write, write) path,
// and otherwise the typed error that explains why not. A runner classifying
// a failed command calls it with the path the command was refused.
func (t *Table) Check(path string, write bool) error {
	op := "read"
	if write {
		op = "write"
	}
	_, err := t.resolve(op, path, write)
	return err
}

// CheckSuffix returns ErrSuffix when the file that path resolves to lies in a
// mount with a suffix list that its name does not match.
func (t *Table) CheckSuffix(path string) error {
	r, err := t.resolve("read", path, false)
	if err != nil {
		return err
	}
	return t.checkSuffix("read", path, r)
}

// CheckSize stats the file that path resolves to and returns ErrTooLarge
// when it is larger than its mount's MaxFileBytes. A missing file passes.
func (t *Table) CheckSize(path string) error {
	r, err := t.resolve("read", path, false)
	if err != nil {
		return err
	}
	if r.e.MaxFileBytes <= 0 {
		return nil
	}
	fi, err := os.Stat(r.host)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &PathError{Op: "read", Path: path, Err: err}
	}
	return t.checkSize("read", path, r, fi.Size())
}

func (t *Table) checkSuffix(op, path string, r resolution) error {
	if len(r.e.Suffixes) == 0 {
		return nil
	}
	base := filepath.Base(r.sandbox)
	for _, s := range r.e.Suffixes {
		if strings.HasSuffix(base, s) && base != s {
			return nil
		}
	}
	return &PathError{Op: op, Path: path, Err: ErrSuffix, Rule: RuleSuffix,
		Allowed: append([]string(nil), r.e.Suffixes...), where: r.e.Target}
}

func (t *Table) checkSize(op, path string, r resolution, size int64) error {
	if r.e.MaxFileBytes > 0 && size > r.e.MaxFileBytes {
		return &PathError{Op: op, Path: path, Err: ErrTooLarge, Rule: RuleMaxFileBytes,
			Size: size, Limit: r.e.MaxFileBytes, where: r.e.Target}
	}
	return nil
}

// resolve normalizes path, walks it with the policy on and, for a write,
// applies the write rules to where it ends.
func (t *Table) resolve(op, path string, write bool) (resolution, error) {
	abs, err := t.normalize(op, path)
	if err != nil {
		return resolution{}, err
	}
	r, err := t.walk(op, path, abs, true)
	if err != nil {
		return resolution{}, err
	}
	if write {
		if err := t.checkWrite(op, path, r); err != nil {
			return resolution{}, err
		}
	}
	return r, nil
}

// checkWrite applies the write rules to a resolution: the entry must be
// writable and no protect path may hold the path, an ancestor or a symbolic
// link followed on the way.
func (t *Table) checkWrite(op, path string, r resolution) error {
	if r.e.Readonly {
		what := "read-only mount "
		switch r.e.Origin {
		case OriginWorkspace:
			what = "read-only workspace "
		case OriginSystem:
			what = "read-only system directory "
		}
		return &PathError{Op: op, Path: path, Err: ErrReadOnly, Rule: RuleReadonly,
			Allowed: t.WritableRoots(), where: what + r.e.Target}
	}
	p := matchUnder(r.sandbox, t.protectS)
	if p == "" {
		p = matchUnder(r.host, t.protectH)
	}
	if p == "" {
		p = r.viaProtect
	}
	if p != "" {
		return &PathError{Op: op, Path: path, Err: ErrReadOnly, Rule: RuleProtect,
			Allowed: t.WritableRoots(), where: p}
	}
	return nil
}

// outsideAllowed is what a refusal of a path outside every mount offers
// instead: the writable roots for a write, the readable ones otherwise.
func (t *Table) outsideAllowed(op string) []string {
	if op == "write" {
		return t.WritableRoots()
	}
	return t.ReadableRoots()
}

// normalize checks path and makes it absolute in the sandbox namespace. It
// does not clean "..": the walk decides what ".." means after a link.
func (t *Table) normalize(op, path string) (string, error) {
	bad := func(why string) error {
		return &PathError{Op: op, Path: path, Err: ErrInvalidPath, Rule: why}
	}
	switch {
	case path == "":
		return "", bad("empty path")
	case strings.IndexByte(path, 0) >= 0:
		return "", bad("contains a NUL byte")
	case len(path) > MaxPathLen:
		return "", bad("longer than 4096 bytes")
	}
	if !strings.HasPrefix(path, "/") {
		if t.root == "" {
			return "", &PathError{Op: op, Path: path, Err: ErrOutsideSandbox, Rule: RuleNoWorkspace,
				Allowed: t.outsideAllowed(op)}
		}
		path = t.root + "/" + path
		if len(path) > MaxPathLen {
			return "", bad("longer than 4096 bytes")
		}
	}
	return path, nil
}

// walk resolves the absolute sandbox path abs one component at a time. Each
// prefix is mapped to the host by the longest-prefix entry and checked
// against the deny list (when policy is on) before it is looked at; a
// symbolic link is read and its target pushed in front of the components
// still to come, starting again at "/" when it is absolute. Components that
// do not exist are kept as they are, so a write can create them. orig is the
// path as the caller gave it, for errors.
func (t *Table) walk(op, orig, abs string, policy bool) (resolution, error) {
	var r resolution
	// pending holds the components still to walk, last one first.
	pending := reversed(strings.Split(abs, "/"))
	cur := "/"
	links := 0
	// gone is why cur is no directory the kernel could step out of with
	// "..": it does not exist, or it is no directory.
	var gone error
	outside := func() error {
		return &PathError{Op: op, Path: orig, Err: ErrOutsideSandbox, Allowed: t.outsideAllowed(op)}
	}
	denied := func(where string) error {
		return &PathError{Op: op, Path: orig, Err: ErrDenied, Rule: RuleDeny,
			Allowed: t.ReadableRoots(), where: where}
	}
	for len(pending) > 0 {
		c := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur holds no symbolic link, so its lexical parent is the
			// parent the kernel would reach, if cur is a directory: the
			// kernel fails ".." after a missing name or a file.
			if gone != nil {
				return r, &PathError{Op: op, Path: orig, Err: gone}
			}
			cur = filepath.Dir(cur)
			continue
		}

		next := join(cur, c)
		if policy {
			if d := matchUnder(next, t.denyS); d != "" {
				return r, denied(d)
			}
		}
		e := t.lookup(next)
		if e == nil {
			if t.isScaffold(next) {
				gone, cur = nil, next
				continue
			}
			return r, outside()
		}
		if next == e.Target {
			// A mount root is a directory whatever the host has there.
			gone, cur = nil, next
			continue
		}
		host := hostOf(e, next)
		if policy {
			if d := matchUnder(host, t.denyH); d != "" {
				return r, denied(d)
			}
		}
		fi, err := os.Lstat(host)
		switch {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			gone, cur = syscall.ENOENT, next
			continue
		case errors.Is(err, syscall.ENOTDIR):
			gone, cur = syscall.ENOTDIR, next
			continue
		case errors.Is(err, syscall.ENAMETOOLONG):
			return r, &PathError{Op: op, Path: orig, Err: ErrInvalidPath, Rule: "a component or the host path is too long"}
		default:
			return r, &PathError{Op: op, Path: orig, Err: err}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() {
				gone = syscall.ENOTDIR
			}
			cur = next
			continue
		}
		links++
		if links > MaxSymlinks {
			return r, &PathError{Op: op, Path: orig, Err: ErrLoop}
		}
		target, err := os.Readlink(host)
		if err != nil {
			return r, &PathError{Op: op, Path: orig, Err: err}
		}
		if target == "" {
			return r, &PathError{Op: op, Path: orig, Err: syscall.ENOENT}
		}
		if policy && r.viaProtect == "" {
			r.viaProtect = matchUnder(next, t.protectS)
			if r.viaProtect == "" {
				r.viaProtect = matchUnder(host, t.protectH)
			}
		}
		pending = append(pending, reversed(strings.Split(target, "/"))...)
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
		// A relative target continues from the link's directory, cur.
	}
	e := t.lookup(cur)
	if e == nil {
		return r, outside()
	}
	r.sandbox, r.e = cur, e
	r.rel = relTo(cur, e.Target)
	r.host = hostOf(e, cur)
	if policy {
		if d := matchUnder(r.sandbox, t.denyS); d != "" {
			return resolution{}, denied(d)
		}
		if d := matchUnder(r.host, t.denyH); d != "" {
			return resolution{}, denied(d)
		}
	}
	return r, nil
}

func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func reversed(s []string) []string {
	out := make([]string, 0, len(s))
	for i := len(s) - 1; i >= 0; i-- {
		out = append(out, s[i])
	}
	return out
}
