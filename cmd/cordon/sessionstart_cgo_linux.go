//go:build linux && cgo

package main

/*
extern int cordon_session_ready_fd;
*/
import "C"

// forkedReadyFD is the ready pipe of a supervisor that sessionstart_linux.c
// forked from `cordon session start` before the Go runtime started, or -1.
func forkedReadyFD() int { return int(C.cordon_session_ready_fd) }
