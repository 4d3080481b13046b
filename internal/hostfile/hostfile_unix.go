//go:build linux || darwin

package hostfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrUnsafe is matched by every refusal of Open: a symbolic link a sandbox
// could have planted, a file that is not a regular file, or one with other
// hard links.
var ErrUnsafe = errors.New("unsafe host file")

// maxLinks bounds the symbolic links followed, as the kernel's MAXSYMLINKS.
const maxLinks = 40

// Open opens the file at path for writing, creating it with mode when
// missing: appended to when appendOnly is set, else truncated once it is
// known to be safe. A relative path is taken from the current directory.
//
// It refuses (ErrUnsafe):
//   - a symbolic link in any folder of the path that the caller can write
//     or owns, since a sandboxed command runs as the caller (or, rootless,
//     as it) and may have made it (and then made the folder read-only); a
//     link in a folder of another user that the caller cannot write (such as
//     /home -> /usr/home in root's /) is followed. Run as root, every folder
//     is writable, so no link is followed: give the path without links;
//   - a symbolic link, FIFO, socket, device or directory as the file itself
//     (the open never follows the last component and never blocks: a FIFO
//     with no reader cannot hang cordon);
//   - a file with other hard links.
//
// Every component is opened relative to the one before it, so a link
// planted while Open runs is met and refused, never followed.
func Open(path string, appendOnly bool, mode os.FileMode) (*os.File, error) {
	abs := path
	if !filepath.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		abs = filepath.Join(wd, abs)
	}
	dir, name := filepath.Split(abs)
	if name == "" || name == "." || name == ".." {
		return nil, fmt.Errorf("%w: %s names no file", ErrUnsafe, path)
	}
	dfd, err := openDir(abs, dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if appendOnly {
		flags |= unix.O_APPEND
	}
	fd, err := openat(dfd, name, flags, uint32(mode.Perm()))
	switch {
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK):
		return nil, fmt.Errorf("%w: %s is a symbolic link; cordon never writes through one (remove it)", ErrUnsafe, abs)
	case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EISDIR):
		return nil, fmt.Errorf("%w: %s is not a regular file (remove it)", ErrUnsafe, abs)
	case err != nil:
		return nil, &os.PathError{Op: "open", Path: abs, Err: err}
	}
	f := os.NewFile(uintptr(fd), abs)
	if err := checkRegular(f, abs); err != nil {
		f.Close()
		return nil, err
	}
	if !appendOnly {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// checkRegular accepts a regular file with one link.
func checkRegular(f *os.File, abs string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: abs, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s is not a regular file (remove it)", ErrUnsafe, abs)
	}
	if st.Nlink > 1 {
		return fmt.Errorf("%w: %s has %d hard links, so writing it would change another file too (remove it)", ErrUnsafe, abs, st.Nlink)
	}
	return nil
}

// openDir opens dir (absolute) one component at a time from /, following
// a symbolic link only where the caller cannot write (see Open).
func openDir(abs, dir string) (int, error) {
	fd, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	cur := "/"
	comps := strings.Split(dir, "/")
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
		}
		next, err := openat(fd, c, dirFlags, 0)
		if err == nil {
			unix.Close(fd)
			fd = next
			if c != ".." {
				cur = filepath.Join(cur, c)
			}
			continue
		}
		link := filepath.Join(cur, c)
		if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) || !isSymlink(fd, c) {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open folder", Path: link, Err: err}
		}
		if callerCouldWrite(fd, cur) {
			unix.Close(fd)
			return -1, fmt.Errorf("%w: %s goes through the symbolic link %s, in a folder a sandboxed command could have written; "+
				"cordon follows no such link when it writes a report or a log: give the path without it", ErrUnsafe, abs, link)
		}
		if links++; links > maxLinks {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open folder", Path: link, Err: unix.ELOOP}
		}
		target, err := readlinkat(fd, c)
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "readlink", Path: link, Err: err}
		}
		comps = append(strings.Split(target, "/"), comps...)
		if filepath.IsAbs(target) {
			unix.Close(fd)
			if fd, err = unix.Open("/", dirFlags, 0); err != nil {
				return -1, err
			}
			cur = "/"
		}
	}
	return fd, nil
}

// callerCouldWrite reports whether a sandbox of the caller could have
// written the folder dirfd (at path): the caller can write it now, or owns
// it. A folder the caller owns may have been made read-only by the very
// command that planted a link in it (mkdir out; ln -s ~/x out/logs; chmod
// 555 out), since a sandbox runs as the caller (rootless, mapped to it).
func callerCouldWrite(dirfd int, path string) bool {
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil || st.Uid == uint32(os.Geteuid()) {
		return true
	}
	return unix.Access(path, unix.W_OK) == nil
}

func isSymlink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
