package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// scanDir calls fn with each entry of the host directory dir (never
// followed if it is a symlink), as the kernel lists it, without a
// DirEntry or a string per entry: the deny watcher's walk meets every name
// below a ** pattern's literal prefix, and refuses nearly all of them on
// the name alone. name is valid only during the call (it points into buf);
// isDir is the entry's type, or an lstat's where the file system does not
// report it. An error of fn ends the scan and is returned as it is.
func scanDir(dir string, buf []byte, fn func(name string, isDir bool) error) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return &scanError{err}
	}
	defer unix.Close(fd)
	for {
		n, err := unix.ReadDirent(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &scanError{err}
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2),
		// d_type (1), d_name (NUL-terminated).
		for off := 0; off+19 < n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen == 0 || off+reclen > n {
				break
			}
			typ, nb := buf[off+18], buf[off+19:off+reclen]
			off += reclen
			if i := bytes.IndexByte(nb, 0); i >= 0 {
				nb = nb[:i]
			}
			if len(nb) == 0 || (nb[0] == '.' && (len(nb) == 1 || (len(nb) == 2 && nb[1] == '.'))) {
				continue
			}
			name := unsafe.String(&nb[0], len(nb))
			isDir := typ == unix.DT_DIR
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				isDir = unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
			}
			if err := fn(name, isDir); err != nil {
				return err
			}
		}
	}
}

// scanError is a failure to read the directory itself (gone, unreadable),
// as opposed to an error of scanDir's callback.
type scanError struct{ err error }

func (e *scanError) Error() string { return "read directory: " + e.err.Error() }
func (e *scanError) Unwrap() error { return e.err }
