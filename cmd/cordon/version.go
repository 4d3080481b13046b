package main

import (
	"fmt"
	"runtime"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "version", summary: "print cordon's version, VCS revision and Go version", run: versionMain})
}

func versionMain(args []string) int {
	fs := newFlagSet("version", "")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	fmt.Printf("cordon %s (%s, %s/%s)\n", cordon.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
