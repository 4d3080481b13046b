package main

import "github.com/cordon-run/cordon"

// maybeInit hands over to libcontainer when cordon was re-executed as a
// container's init.
func maybeInit() { cordon.Init() }
