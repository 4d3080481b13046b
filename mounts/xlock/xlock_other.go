//go:build !unix

package xlock

import "time"

// Wait is how long Lock waits for a lock another process holds.
const Wait = 5 * time.Second

// Lock fails with ErrUnsupported: this platform has no flock(2).
func Lock(dirfd int) (unlock func(), err error) {
	return nil, ErrUnsupported
}
