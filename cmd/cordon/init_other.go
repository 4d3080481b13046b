//go:build !linux

package main

// maybeInit is a no-op off Linux: only libcontainer re-executes cordon.
func maybeInit() {}
