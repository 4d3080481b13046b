package spec

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readRegular reads the regular file at path without ever blocking: a
// config, worker file or the trust store may lie in a folder a sandboxed
// command could write, and a FIFO planted there would otherwise hang every
// later cordon that discovers it. nofollow refuses a symbolic link as the
// file itself (the trust store: only cordon writes it).
func readRegular(path string, nofollow bool) ([]byte, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if nofollow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is a %s, not a regular file; remove it", path, fi.Mode().Type())
	}
	return io.ReadAll(f)
}
