package ociruntime

import "golang.org/x/sys/unix"

// sysOpen is open(2)'s number, where the architecture has one.
const sysOpen = unix.SYS_OPEN
