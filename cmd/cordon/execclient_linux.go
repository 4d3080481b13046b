//go:build linux && cgo

// `cordon exec` is served in C before the Go runtime starts: on amd64 by a
// fast path at the binary's entry point, before even the C library starts
// (execfast_linux.c), and otherwise by a constructor (execclient_linux.c).
// A harness starts the client for every command, and a Go start-up would
// cost more than the exec itself.

package main

/*
#cgo CFLAGS: -Wall -Wextra
#cgo linux,amd64 LDFLAGS: -Wl,-e,cordonentry
*/
import "C"
