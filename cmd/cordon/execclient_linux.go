//go:build linux && cgo

// `cordon exec` is served by a C constructor (execclient_linux.c) that runs
// before the Go runtime starts: a harness starts the client for every
// command, and a Go start-up would cost more than the exec itself.

package main

import "C"
