//go:build unix

package gitid

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ownedDir fails unless d is a real directory (no symlink) the caller
// owns that no one else can write.
func ownedDir(d string) error {
	var st unix.Stat_t
	if err := unix.Lstat(d, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("%s is not a directory of the caller's alone", d)
	}
	return nil
}

func readNoFollow(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	buf := make([]byte, 64<<10)
	n, err := f.Read(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
