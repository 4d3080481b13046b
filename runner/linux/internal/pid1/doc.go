// Package pid1 is the C of the Linux backend: the sandbox's and a
// session's PID 1 (constructors that run before the Go runtime starts, as
// runc's nsenter does), the session reaper and the deny cover, and the
// fork server's wire format (forkproto_linux.h) with its Go codec, checked
// against the header through cgo when the package builds.
package pid1
