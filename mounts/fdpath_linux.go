package mounts

import (
	"os"

	"github.com/cyphar/filepath-securejoin/pathrs-lite/procfs"
)

// fdPath returns the path the kernel reports for f, read from
// /proc/thread-self/fd through pathrs-lite's hardened procfs handle (which
// refuses a /proc that has been tampered with).
func fdPath(f *os.File) (string, error) {
	return procfs.ProcSelfFdReadlink(f)
}
