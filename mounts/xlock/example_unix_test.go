//go:build unix

package xlock_test

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts/xlock"
)

// A file tool decides and acts on a name in a directory under that
// directory's lock, as the broker does.
func ExampleLock() {
	dir, err := os.MkdirTemp("", "xlock-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	defer unix.Close(fd)
	unlock, err := xlock.Lock(fd)
	if err != nil {
		fmt.Println("refused:", err) // ErrBusy after xlock.Wait: fail closed
		return
	}
	defer unlock()
	// Decide on what dir holds, then act on it, here.
	fmt.Println("locked")
	// Output: locked
}
