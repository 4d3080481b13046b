//go:build unix

package audit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// appendLocked appends buf to the regular file at path with one write(2),
// holding an exclusive flock(2) on the descriptor. O_NOFOLLOW refuses a
// symbolic link in the last component, so a sandboxed process that can
// write the log's folder cannot turn cordon's appends against another file.
func appendLocked(path string, buf []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // the write's own error is what matters; close releases the lock
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file", path, fi.Mode().Type())
	}
	if err := flock(f, unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	n, err := f.Write(buf)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("short write: %d of %d bytes", n, len(buf))
	}
	return nil
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}
