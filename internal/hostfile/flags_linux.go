package hostfile

import "golang.org/x/sys/unix"

// dirFlags open a folder only to resolve names in it.
const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
