//go:build unix

package mounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/decide"
)

// The file tools ask package decide what the Linux broker asks for the
// sandbox's processes: a name that would complete a directory git takes
// for a repository, a config or hook in one, a config's content. The walk
// below is the one place they do: Write acts on it, and CheckWrite (behind
// `cordon check` and Files.Check) runs it without acting, so the two
// cannot answer differently.

// shapeError is a refusal by package decide.
func (t *Table) shapeError(rule string) error {
	return &PathError{Err: ErrReadOnly, Rule: RuleProtect, Allowed: t.WritableRoots(), where: rule}
}

// writeRelevant reports whether any name a write of r makes may matter to
// package decide's rules (then the write holds decide.Lock, and each
// directory it decides on is locked against other processes: lockShape).
func writeRelevant(r resolution) bool {
	comps := splitRel(r.rel)
	for i := range comps {
		if decide.Relevant(join(r.e.Target, strings.Join(comps[:i+1], "/"))) {
			return true
		}
	}
	return false
}

// CheckWrite returns nil when a write of path by the file tools (and a
// command's create there) is allowed now, and otherwise the typed error:
// Check's answer, then package decide's on the names the write would
// make, decided on the directories as they are, without making anything.
// A git config's content is not known here: a config that only a rename
// with checked content may make is answered as refused.
func (t *Table) CheckWrite(path string) error {
	r, err := t.resolve("write", path, true)
	if err != nil || r.rel == "" || !writeRelevant(r) {
		return err
	}
	locks := decide.Lock()
	defer locks.Release()
	err = t.walkWrite(r, locks, nil, nil)
	var pe *PathError
	if errors.As(err, &pe) && (pe.Err == ErrReadOnly || pe.Err == ErrDenied) {
		return t.toolError("write", path, err)
	}
	return nil // not a rule's refusal: the write itself would say why
}

// emptyDir is a directory the walk would make: it holds nothing yet.
type emptyDir struct{ up decide.Dir }

func (emptyDir) Lstat(name string) (decide.Entry, error) {
	return decide.Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
}

func (emptyDir) Names(name string) ([]string, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (emptyDir) ReadFile(name string, _ int64) ([]byte, uint32, error) {
	return nil, 0, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

func (d emptyDir) Parent() (decide.Dir, error) { return d.up, nil }

// fdDir is the decide.Dir of a directory the walk holds, whose parent is up.
func fdDir(f *os.File, up decide.Dir) decide.Dir {
	d := decide.FD{Dirfd: int(f.Fd())}
	if up != nil {
		d.Up = func() (decide.Dir, error) { return up, nil }
	}
	return d
}

// lockShape adds to locks (nil: none held, the write matters to no rule)
// the cross-process lock of the directory whose shape a name made at the
// sandbox path sp in d may change (decide.ShapeDir), when sp may matter to
// the rules: a sandbox's broker on the same workspace decides and acts
// under the same lock. A directory the walk would make (emptyDir) holds
// nothing yet, and a hooks directory at the entry's root has no parent
// the tools see (decide decides nothing there): neither is locked. The
// walk's last verify reads the held directory's place again under the
// locks, so one moved before its lock was taken is refused (ErrChanged).
func lockShape(locks *decide.Locks, d decide.Dir, sp string) error {
	if locks == nil || !decide.Relevant(sp) {
		return nil
	}
	sd, err := decide.ShapeDir(d, sp)
	if err != nil {
		return nil // no parent in view: nothing to decide on
	}
	if _, ok := sd.(emptyDir); ok {
		return nil
	}
	if err := locks.Add(sd); err != nil {
		return fmt.Errorf("cannot decide %s: %w", sp, err)
	}
	return nil
}

// walkWrite walks to the directory of r's file, one held descriptor at a
// time and without following a symbolic link, and decides each missing
// parent (the deny and protect lists, then package decide) and the file
// (decide), each under its directory's lock in locks (see lockShape).
// With finish nil it makes nothing: a missing directory is decided as
// made and empty. With finish, it makes each allowed parent, performs the
// rewrite a verdict asks for, and calls finish with the file's directory.
// content is the file's, or nil when not known.
func (t *Table) walkWrite(r resolution, locks *decide.Locks, content *string, finish func(dir *os.File, name string) error) error {
	comps := splitRel(r.rel)
	dirComps, name := comps[:len(comps)-1], comps[len(comps)-1]
	root, base, err := openEntryRoot(r.e)
	if err != nil {
		return err
	}
	held := []*os.File{root}
	defer func() {
		for _, f := range held {
			f.Close() //nolint:errcheck,gosec // directory descriptors
		}
	}()
	rules := t.rules()
	dir, d := root, fdDir(root, nil)
	for i, c := range dirComps {
		rel := strings.Join(dirComps[:i+1], "/")
		if dir != nil {
			sub, err := openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
			if err == nil {
				held = append(held, sub)
				dir, d = sub, fdDir(sub, d)
				continue
			}
			if !errors.Is(err, unix.ENOENT) {
				return swapped(dir, c, err)
			}
		}
		sp := join(r.e.Target, rel)
		if err := t.checkParent(r.e, rel, sp); err != nil {
			return err
		}
		if err := lockShape(locks, d, sp); err != nil {
			return err
		}
		v := decide.Make(rules, d, sp, true)
		if v.Rule != "" {
			return t.shapeError(v.Rule)
		}
		if finish == nil {
			dir, d = nil, emptyDir{up: d}
			continue
		}
		if v.Rewrite != nil {
			if err := rewriteConfig(dir, v.Rewrite); err != nil {
				return err
			}
		}
		err := ignoringEINTR(func() error { return unix.Mkdirat(int(dir.Fd()), c, 0o777) })
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		sub, err := openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return swapped(dir, c, err)
		}
		held = append(held, sub)
		dir, d = sub, fdDir(sub, d)
	}
	if err := lockShape(locks, d, r.sandbox); err != nil {
		return err
	}
	rw, err := t.decideFile(rules, d, r.sandbox, content)
	if err != nil || finish == nil {
		return err
	}
	if err := verify(dir, base, strings.Join(dirComps, "/")); err != nil {
		return err
	}
	if rw != nil {
		if err := rewriteConfig(dir, rw); err != nil {
			return err
		}
	}
	return finish(dir, name)
}

// checkParent applies the deny and protect lists to a parent directory
// Write would make at the sandbox path sp (rel in e).
func (t *Table) checkParent(e *Entry, rel, sp string) error {
	dir := resolution{sandbox: sp, e: e, rel: rel, host: filepath.Join(e.Source, rel)}
	if matchUnder(dir.sandbox, t.denyS) != "" || matchUnder(dir.host, t.denyH) != "" {
		return &PathError{Err: ErrDenied, Rule: RuleDeny, Allowed: t.ReadableRoots(), where: dir.sandbox}
	}
	return t.checkWrite("write", "", dir)
}

// decideFile decides the file Write renames to the sandbox path sp in d:
// a shaped directory's config by its content (as the broker decides
// config.lock renamed over it), any other name as a rename's target.
func (t *Table) decideFile(rules decide.Rules, d decide.Dir, sp string, content *string) (*decide.Rewrite, error) {
	if content != nil && decide.ConfigReplaced(rules, d, sp) {
		if rule := decide.ReplaceConfig(rules, d, sp, []byte(*content)); rule != "" {
			return nil, t.shapeError(rule)
		}
		return nil, nil
	}
	v := decide.Make(rules, d, sp, false)
	if v.Rule != "" {
		return nil, t.shapeError(v.Rule)
	}
	return v.Rewrite, nil
}

// rewriteConfig replaces the config a verdict names through a new file of
// the tools' own in dir (see decide.Verdict).
func rewriteConfig(dir *os.File, rw *decide.Rewrite) error {
	tmp, err := tempName()
	if err != nil {
		return err
	}
	f, err := openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, rw.Mode&0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(rw.Data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = ignoringEINTR(func() error { return unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), rw.Name) })
	}
	if werr != nil {
		_ = unix.Unlinkat(int(dir.Fd()), tmp, 0)
	}
	return werr
}
