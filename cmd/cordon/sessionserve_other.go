//go:build !linux

package main

import (
	"fmt"
	"os"
)

func sessionServe([]string) int {
	fmt.Fprintln(os.Stderr, "cordon: warm sessions need Linux")
	return exitSetup
}

// serveSession is never reached here: forkedReadyFD is -1 without Linux.
func serveSession(args []string, _ bool) int { return sessionServe(args) }
