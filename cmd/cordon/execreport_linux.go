package main

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// execReport is `cordon exec`'s --report file in the Go client, handled as
// the C client handles it (execreport_linux.c): opened before the request
// leaves following no symbolic link in any folder or as the file, only a
// regular file with one link, never blocking on a FIFO; written once the
// command's processes are gone, through the descriptor only when the path
// still names that file, else in a file created afresh in place of
// whatever the command left there (a command can replace the file while it
// runs: the session was built before the path was known).
type execReport struct {
	path string
	fd   int
}

// reportDir opens the folder of path one component at a time, following
// no symbolic link, and returns it with the last component.
func reportDir(path string) (int, string, error) {
	start := "."
	if strings.HasPrefix(path, "/") {
		start = "/"
	}
	dfd, err := unix.Open(start, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", err
	}
	name := ""
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			continue
		}
		if name != "" {
			nd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			unix.Close(dfd)
			if err != nil {
				return -1, "", err
			}
			dfd = nd
		}
		name = c
	}
	if name == "" || name == "." || name == ".." {
		unix.Close(dfd)
		return -1, "", unix.EISDIR
	}
	return dfd, name, nil
}

// openReportFile opens name in dfd for writing without following it or
// blocking, and accepts only a regular file with one link.
func openReportFile(dfd int, name string, excl bool) (int, error) {
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if excl {
		flags |= unix.O_EXCL
	}
	fd, err := unix.Openat(dfd, name, flags, 0o644)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		unix.Close(fd)
		return -1, unix.EINVAL
	}
	return fd, nil
}

// openExecReport opens (and empties) the report at path.
func openExecReport(path string) (*execReport, error) {
	dfd, name, err := reportDir(path)
	if err != nil {
		return nil, err
	}
	fd, err := openReportFile(dfd, name, false)
	unix.Close(dfd)
	if err == nil {
		if err = unix.Ftruncate(fd, 0); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return nil, err
	}
	return &execReport{path: path, fd: fd}, nil
}

// replaceReportFile removes what is at name in dfd (never following it) and
// creates a regular file there; when the entry cannot be removed, it takes
// an existing regular file with one link in place.
func replaceReportFile(dfd int, name string) (int, error) {
	if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		_ = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
	}
	fd, err := openReportFile(dfd, name, true)
	if errors.Is(err, unix.EEXIST) {
		fd, err = openReportFile(dfd, name, false)
	}
	return fd, err
}

// ownFolderWritable gives the owner write and search permission on the
// folder dfd when the caller owns it and lacks them: a command running as
// the caller (rootless) can chmod 555 the report's folder after planting a
// forged report in it. It reports whether it changed the mode.
func ownFolderWritable(dfd int) bool {
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Geteuid() && st.Mode&0o300 != 0o300 &&
		unix.Fchmod(fd, (st.Mode&0o7777)|0o300) == nil
}

// reopen returns a descriptor of the file now at the report's path.
func (r *execReport) reopen() (int, error) {
	dfd, name, err := reportDir(r.path)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dfd)
	var now, held unix.Stat_t
	var fd int
	if unix.Fstatat(dfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && unix.Fstat(r.fd, &held) == nil &&
		now.Mode&unix.S_IFMT == unix.S_IFREG && now.Dev == held.Dev && now.Ino == held.Ino && now.Nlink == 1 {
		fd, err = unix.Dup(r.fd)
	} else {
		fd, err = replaceReportFile(dfd, name)
		if err != nil && ownFolderWritable(dfd) {
			fd, err = replaceReportFile(dfd, name)
		}
	}
	if err != nil {
		return -1, err
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// write writes the report once, at the report's path as it is now, and
// closes it; a nil report writes nothing.
func (r *execReport) write(data []byte) error {
	if r == nil || r.fd < 0 {
		return nil
	}
	fd, err := r.reopen()
	unix.Close(r.fd)
	r.fd = -1
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), r.path)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// strerror words an error as the C library's strerror does (the C client's
// messages): "No such file or directory".
func strerror(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}
