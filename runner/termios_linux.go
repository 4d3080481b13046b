package runner

import "golang.org/x/sys/unix"

// ioctlGetTermios reads a terminal's settings; on a pty master, Linux
// answers with those of its slave, the command's terminal.
const ioctlGetTermios = unix.TCGETS

// ioctlSetTermios sets a terminal's settings (tests).
const ioctlSetTermios = unix.TCSETS
