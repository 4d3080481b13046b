package overlay

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// applier writes changes under the workspace through directory
// descriptors opened one component at a time with O_NOFOLLOW, and reads
// the upper layer the same way: a file costs an open of each side, the
// copy, a chmod and a rename, with no path walked from the root.
type applier struct {
	o *Overlay
	// dirs are the host directories by slash path ("" the workspace),
	// updirs the upper layer's.
	dirs, updirs map[string]int
	// prefix names this apply's temporary files: ".cordon-apply-" and a
	// random part, then a counter and the file's name.
	prefix string
	temps  []temp
	// fresh are the directories this apply makes where the host has
	// none (nor will, once the apply's deletions are done), under their
	// parent that the host has: each is made under a temporary name,
	// filled, and renamed into place whole, so that what it holds is
	// written in place and needs no rename of its own. below holds them
	// and every directory made inside one. gone are the paths the apply
	// deletes.
	fresh       map[string]string
	below, gone map[string]bool
}

type temp struct {
	dir        int
	name, dest string
}

func newApplier(o *Overlay) (*applier, error) {
	root, err := unix.Open(o.Workspace, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("apply overlay %s: open %s: %w", o.Name, o.Workspace, err)
	}
	up, err := unix.Open(o.Upper(), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(root)
		return nil, fmt.Errorf("apply overlay %s: open %s: %w", o.Name, o.Upper(), err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &applier{o: o, dirs: map[string]int{"": root}, updirs: map[string]int{"": up},
		prefix: ".cordon-apply-" + hex.EncodeToString(b[:]) + "-",
		fresh:  map[string]string{}, below: map[string]bool{}, gone: map[string]bool{}}, nil
}

func (a *applier) close() {
	for _, t := range a.temps {
		_ = unix.Unlinkat(t.dir, t.name, 0)
	}
	for rel, tmp := range a.fresh {
		// Never renamed into place: the directory and what it holds go.
		parent, _ := split(rel)
		if pfd, ok := a.dirs[parent]; ok && !a.below[parent] {
			if r, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(pfd)); err == nil {
				_ = r.RemoveAll(tmp)
				r.Close()
			}
		}
	}
	for _, fd := range a.dirs {
		unix.Close(fd)
	}
	for _, fd := range a.updirs {
		unix.Close(fd)
	}
}

// dir opens the host directory rel (slash path), making what is missing
// with the overlay's modes; a component that is a symlink or not a
// directory is refused.
func (a *applier) dir(rel string) (int, error) {
	if fd, ok := a.dirs[rel]; ok {
		return fd, nil
	}
	parent, name := split(rel)
	pfd, err := a.dir(parent)
	if err != nil {
		return -1, err
	}
	open := func() (int, error) {
		return unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	fd, err := open()
	// A host entry that is not a directory (a symlink included: it is
	// not followed) and that the apply deletes is as good as none.
	if errors.Is(err, unix.ENOENT) || a.gone[rel] && (errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)) {
		perm := uint32(0o755)
		var st unix.Stat_t
		if ufd, uerr := a.upperDir(parent); uerr == nil && unix.Fstatat(ufd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			perm = st.Mode & 0o777
		}
		if !a.below[parent] {
			return a.freshDir(rel, pfd, name, perm)
		}
		if err = unix.Mkdirat(pfd, name, perm); err == nil {
			fd, err = open()
			a.below[rel] = true
		}
	}
	if err != nil {
		return -1, fmt.Errorf("%s: not a directory on the host (a symlink is not written through): %w", filepath.Join(a.o.Workspace, rel), err)
	}
	a.dirs[rel] = fd
	return fd, nil
}

// freshDir makes rel, missing on the host, under a temporary name in its
// parent pfd (see applier.fresh).
func (a *applier) freshDir(rel string, pfd int, name string, perm uint32) (int, error) {
	tmp := a.prefix + "d" + strconv.Itoa(len(a.fresh)) + "-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	if err := unix.Mkdirat(pfd, tmp, perm); err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(a.o.Workspace, rel), err)
	}
	a.fresh[rel] = tmp
	fd, err := unix.Openat(pfd, tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(a.o.Workspace, rel), err)
	}
	a.dirs[rel], a.below[rel] = fd, true
	return fd, nil
}

// upperDir opens the upper layer's directory rel, never through a symlink.
func (a *applier) upperDir(rel string) (int, error) {
	if fd, ok := a.updirs[rel]; ok {
		return fd, nil
	}
	parent, name := split(rel)
	pfd, err := a.upperDir(parent)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(pfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", filepath.Join(a.o.Upper(), rel), err)
	}
	a.updirs[rel] = fd
	return fd, nil
}

// split is path.Split of a slash path relative to the workspace, without
// the parent's trailing slash ("" for the workspace itself).
func split(rel string) (string, string) {
	parent, name := path.Split(rel)
	if parent != "" {
		parent = parent[:len(parent)-1]
	}
	return parent, name
}

// run lands changes and records in m the host's state of each path it
// landed (removing the paths it removed).
func (a *applier) run(changes []Change, m Manifest) error {
	// Every new file is written to a temporary file first; none is
	// renamed before all are on disk. The directories are opened (and
	// the missing ones made) first, so that the files can be written in
	// parallel.
	var files []Change
	for _, c := range changes {
		if c.Kind == Deleted {
			a.gone[c.Path] = true
		}
	}
	for _, c := range changes {
		if c.Kind == Deleted || c.Dir() {
			continue
		}
		parent, _ := split(c.Path)
		if _, err := a.dir(parent); err != nil {
			return err
		}
		if _, err := a.upperDir(parent); err != nil {
			return err
		}
		files = append(files, c)
	}
	if err := a.stageAll(files); err != nil {
		return err
	}
	if err := a.sync(); err != nil {
		return err
	}
	byDest := make(map[string]temp, len(a.temps))
	for _, t := range a.temps {
		byDest[t.dest] = t
	}
	// Deletions first, what a directory holds before it; then the rest,
	// a directory before what it holds.
	for i := len(changes) - 1; i >= 0; i-- {
		if c := changes[i]; c.Kind == Deleted {
			if err := a.land(c, byDest); err != nil {
				return err
			}
			delete(m, c.Path)
		}
	}
	for _, c := range changes {
		if c.Kind == Deleted {
			continue
		}
		if err := a.land(c, byDest); err != nil {
			return err
		}
		if st, err := a.state(c.Path); err == nil {
			m[c.Path] = st
		} else {
			delete(m, c.Path)
		}
	}
	a.temps = nil
	return a.sync()
}

// state is the host's state of rel after it landed.
func (a *applier) state(rel string) (State, error) {
	parent, name := split(rel)
	dfd, err := a.dir(parent)
	if err != nil {
		return State{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return State{}, err
	}
	return State{Mode: st.Mode, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}, nil
}

// sync syncs each file system the applier's host directories are on
// (the workspace's, and those mounted below it that it wrote to).
func (a *applier) sync() error {
	seen := map[uint64]bool{}
	for rel, fd := range a.dirs {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Join(a.o.Workspace, rel), err)
		}
		if seen[st.Dev] {
			continue
		}
		seen[st.Dev] = true
		// syncfs needs a descriptor that is not O_PATH.
		d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Syncfs(d)
			unix.Close(d)
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Join(a.o.Workspace, rel), err)
		}
	}
	return nil
}

// stageAll stages files, on as many threads as Go runs (at most 4): a
// file's copy is mostly system calls, which run in parallel in distinct
// directories and even in one.
func (a *applier) stageAll(files []Change) error {
	workers := min(runtime.GOMAXPROCS(0), 4, len(files)/64+1)
	temps := make([]temp, len(files))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Worker w takes every workers-th file: the files of one
			// directory are spread over all, so that each directory's
			// lock is taken in turn, not held by one while the others
			// wait.
			for i := w; i < len(files); i += workers {
				t, err := a.stage(files[i], i)
				if t.name != "" {
					temps[i] = t
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, t := range temps {
		if t.name != "" {
			a.temps = append(a.temps, t)
		}
	}
	return errors.Join(errs...)
}

// stage writes c's new content to a temporary file beside its name; its
// directories are open already. The temporary file is returned, named,
// from the moment it exists.
func (a *applier) stage(c Change, i int) (temp, error) {
	parent, name := split(c.Path)
	dfd, sfd := a.dirs[parent], a.updirs[parent]
	host := filepath.Join(a.o.Workspace, c.Path)
	tmp := a.prefix + strconv.Itoa(i) + "-" + name
	if len(tmp) > 255 {
		tmp = tmp[:255]
	}
	t := temp{dfd, tmp, c.Path}
	if a.below[parent] {
		// Its directory lands whole, after this file is on disk: it is
		// written at its own name.
		tmp, t = name, temp{}
	}
	if c.NewMode == modeSymlink {
		target, err := readlinkat(sfd, name)
		if err != nil {
			return temp{}, fmt.Errorf("%s: %w", filepath.Join(a.o.Upper(), c.Path), err)
		}
		if err := unix.Symlinkat(target, dfd, tmp); err != nil {
			return temp{}, fmt.Errorf("%s: %w", host, err)
		}
		return t, nil
	}
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return temp{}, fmt.Errorf("%s: %w", filepath.Join(a.o.Upper(), c.Path), err)
	}
	defer unix.Close(in)
	out, err := unix.Openat(dfd, tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return temp{}, fmt.Errorf("%s: %w", host, err)
	}
	defer unix.Close(out)
	if err := copyFile(out, in); err != nil {
		return t, fmt.Errorf("%s: %w", host, err)
	}
	// Set-id bits are never landed, as the broker never lets a run set them.
	if err := unix.Fchmod(out, uint32(c.Perm.Perm())); err != nil {
		return t, fmt.Errorf("%s: %w", host, err)
	}
	return t, nil
}

// copyFile copies what is left of src to dst: in the kernel with
// copy_file_range where both file systems allow it, else through a buffer.
func copyFile(dst, src int) error {
	for {
		n, err := unix.CopyFileRange(src, nil, dst, nil, 1<<30, 0)
		switch {
		case err == nil && n == 0:
			return nil
		case err == nil, errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
			return copyBuffered(dst, src)
		default:
			return err
		}
	}
}

func copyBuffered(dst, src int) error {
	buf := make([]byte, 128<<10)
	for {
		n, err := unix.Read(src, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			return err
		}
		for b := buf[:n]; len(b) > 0; {
			m, err := unix.Write(dst, b)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			b = b[m:]
		}
	}
}

// landFresh renames the fresh directory rel (applier.fresh), if it is
// one, into place in its parent dfd: never over an entry the host made
// meanwhile.
func (a *applier) landFresh(rel string, dfd int, name string) error {
	tmp, ok := a.fresh[rel]
	if !ok {
		return nil
	}
	err := unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) {
		err = unix.Renameat(dfd, tmp, dfd, name)
	}
	if errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) {
		return fmt.Errorf("%w: the host made %s while the overlay was being applied; the files before it in path order are applied; fix: run cordon diff and apply again, or discard",
			ErrConflict, filepath.Join(a.o.Workspace, rel))
	}
	if err == nil {
		delete(a.fresh, rel)
	}
	return err
}

func readlinkat(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// land renames c's temporary file over its name (a new file only where
// the host still has none), makes its directory, or removes its host path.
func (a *applier) land(c Change, byDest map[string]temp) error {
	parent, name := split(c.Path)
	dfd, err := a.dir(parent)
	if err != nil {
		return err
	}
	host := filepath.Join(a.o.Workspace, c.Path)
	switch {
	case c.Kind == Deleted && c.Dir():
		err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		if fd, ok := a.dirs[c.Path]; ok {
			unix.Close(fd)
			delete(a.dirs, c.Path)
		}
	case c.Kind == Deleted:
		err = unix.Unlinkat(dfd, name, 0)
	case c.Dir():
		if _, err = a.dir(c.Path); err == nil {
			err = a.landFresh(c.Path, dfd, name)
		}
	case a.below[parent]:
		// Written in place in a directory that landed whole.
	case c.Kind == Added:
		t := byDest[c.Path]
		err = unix.Renameat2(t.dir, t.name, dfd, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) {
			// A file system without RENAME_NOREPLACE: the check for
			// conflicts made just before stands.
			err = unix.Renameat(t.dir, t.name, dfd, name)
		}
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%w: the host made %s while the overlay was being applied; the files before it in path order are applied; fix: run cordon diff and apply again, or discard",
				ErrConflict, host)
		}
	default:
		t := byDest[c.Path]
		err = unix.Renameat(t.dir, t.name, dfd, name)
	}
	if err != nil && !(c.Kind == Deleted && errors.Is(err, unix.ENOENT)) {
		return fmt.Errorf("%s: %w", host, err)
	}
	return nil
}
