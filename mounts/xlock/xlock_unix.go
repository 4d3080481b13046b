//go:build unix

package xlock

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Wait is how long Lock waits for a lock another process holds before it
// fails with ErrBusy. It is longer than any decision a broker makes under
// the lock (the longest, a renamed directory's walk, is bounded by its
// entry count) and short enough that a call never hangs.
const Wait = 5 * time.Second

// Lock takes the exclusive lock of the directory dirfd names (any
// descriptor of it, O_PATH included) and returns its release. It waits at
// most Wait, then fails with ErrBusy; it fails closed when the directory
// cannot be opened for reading.
func Lock(dirfd int) (unlock func(), err error) {
	return lockWithin(dirfd, Wait)
}

func lockWithin(dirfd int, wait time.Duration) (func(), error) {
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the directory to lock it: %w", err)
	}
	unlock := func() { unix.Close(fd) } // the lock goes with the descriptor
	deadline := time.Now().Add(wait)
	backoff := 20 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return unlock, nil
		case err == unix.EINTR:
			continue
		case err != unix.EWOULDBLOCK:
			unlock()
			return nil, fmt.Errorf("flock: %w", err)
		case !time.Now().Before(deadline):
			unlock()
			return nil, fmt.Errorf("after %v: %w", wait, ErrBusy)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Millisecond)
	}
}
