//go:build !linux

package main

import (
	"fmt"
	"os"
)

// execMain: named sessions need Linux.
func execMain([]string) int {
	fmt.Fprintln(os.Stderr, "cordon exec: named sessions need Linux")
	return exitSetup
}
