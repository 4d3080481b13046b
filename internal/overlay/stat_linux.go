package overlay

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func ctime(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }

// opaque reports whether the upper directory p is opaque: it replaces the
// lower directory of the same name instead of merging with it. overlayfs
// marks it with trusted.overlay.opaque, or user.overlay.opaque when
// mounted with userxattr (a rootless run).
func opaque(p string) bool {
	var buf [4]byte
	for _, name := range []string{"trusted.overlay.opaque", "user.overlay.opaque"} {
		if n, err := unix.Lgetxattr(p, name, buf[:]); err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}
