//go:build !linux || !cgo

package main

// forkedReadyFD is -1: without the C constructor, `cordon session start`
// starts its supervisor as a process of its own.
func forkedReadyFD() int { return -1 }
