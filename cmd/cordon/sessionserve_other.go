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
