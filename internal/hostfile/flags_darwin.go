package hostfile

import "golang.org/x/sys/unix"

// dirFlags open a folder only to resolve names in it (macOS has no O_PATH).
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
