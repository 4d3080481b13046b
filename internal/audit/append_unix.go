//go:build linux || darwin

package audit

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/hostfile"
)

// appendLocked appends buf to the regular file at path with one write(2),
// holding an exclusive flock(2) on the descriptor. hostfile.Open refuses a
// symbolic link a sandbox could have planted in any component (not only the
// last: a planted logs -> /any/dir would otherwise get a log created in
// /any/dir), a FIFO and a hard link, so a sandboxed process that can write
// the log's folder cannot turn cordon's appends against another file.
func appendLocked(path string, buf []byte) error {
	f, err := hostfile.Open(path, true, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // the write's own error is what matters; close releases the lock
	if err := lockWithin(f, lockTimeout); err != nil {
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

// lockTimeout bounds the wait for the log's lock: appends hold it for one
// write, so a lock held longer is stuck (or held on purpose), and the run
// fails closed rather than hang.
const lockTimeout = 10 * time.Second

// lockWithin takes an exclusive flock on f, giving up after d.
func lockWithin(f *os.File, d time.Duration) error {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EWOULDBLOCK {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the log has been locked by another process for over %s", d)
		}
		time.Sleep(wait)
	}
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}
