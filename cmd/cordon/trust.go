package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "trust", summary: "trust a project cordon.yaml (found upwards, or FILE) after reviewing it", run: trustMain})
}

func trustMain(args []string) int {
	fs := newFlagSet("trust", "[FILE]")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	path := fs.Arg(0)
	if path == "" {
		cwd, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cordon:", err)
			return exitConfig
		}
		if path, err = spec.FindProjectConfig(cwd); err != nil || path == "" {
			fmt.Fprintln(os.Stderr, "cordon trust: no cordon.yaml here or above; name one: cordon trust FILE")
			return exitConfig
		}
	}
	if err := spec.Trust(path); err != nil {
		return configError(os.Stderr, err)
	}
	fmt.Printf("trusted %s as it is now (store: %s); any change to it ends the trust\n", path, spec.TrustStorePath())
	return exitOK
}
