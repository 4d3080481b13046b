//go:build unix

package decide

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// FD is a Dir on a directory descriptor the writer holds (an O_PATH one
// will do). It never follows a symlink in the names it is asked about.
type FD struct {
	// Dirfd is the directory's descriptor; FD does not close it.
	Dirfd int
	// Up returns the directory that holds this one, as the writer
	// resolves it; nil: unknown (Parent fails).
	Up func() (Dir, error)
}

// Lstat implements Dir.
func (d FD) Lstat(name string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.Dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Entry{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return EntryOf(&st), nil
}

// EntryOf is the Entry of a stat result.
func EntryOf(st *unix.Stat_t) Entry {
	e := Entry{UID: st.Uid, Dev: uint64(st.Dev), Ino: uint64(st.Ino)} //nolint:unconvert // narrower on some platforms
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		e.Type = fs.ModeDir
	case unix.S_IFLNK:
		e.Type = fs.ModeSymlink
	default:
		e.Type = fs.ModeIrregular
	}
	return e
}

// Names implements Dir.
func (d FD) Names(name string) ([]string, error) {
	fd, err := unix.Openat(d.Dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() //nolint:errcheck // read-only descriptor
	return f.Readdirnames(-1)
}

// ReadFile implements Dir.
func (d FD) ReadFile(name string, limit int64) ([]byte, uint32, error) {
	fd, err := unix.Openat(d.Dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() //nolint:errcheck // read-only descriptor
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, &fs.PathError{Op: "read", Path: name, Err: unix.EACCES}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, 0, err
	}
	return data, uint32(st.Mode), nil
}

// Parent implements Dir.
func (d FD) Parent() (Dir, error) {
	if d.Up == nil {
		return nil, &fs.PathError{Op: "parent", Path: ".", Err: fs.ErrNotExist}
	}
	return d.Up()
}
