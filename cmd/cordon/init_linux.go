package main

import "github.com/cordon-run/cordon/runner"

// maybeInit hands over to libcontainer when cordon was re-executed as a
// container's init.
func maybeInit() { runner.Init() }
