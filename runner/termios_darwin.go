package runner

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings.
const ioctlGetTermios = unix.TIOCGETA

// ioctlSetTermios sets a terminal's settings (tests).
const ioctlSetTermios = unix.TIOCSETA
