//go:build unix && !linux

package mounts

import "os"

// fdPath returns "" where the system offers no trustworthy path of an open
// descriptor: verify is skipped there, and the O_NOFOLLOW descent alone
// keeps a swapped-in symbolic link from redirecting the file tools.
func fdPath(*os.File) (string, error) { return "", nil }
