package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "trust", summary: "trust a project cordon.yaml (found upwards, or FILE) after reviewing it; --list, --revoke", run: trustMain})
}

func trustMain(args []string) int {
	fs := newFlagSet("trust", "[--list | --revoke] [FILE]")
	list := fs.Bool("list", false, "list the trusted configs and whether each is unchanged")
	revoke := fs.Bool("revoke", false, "end the trust of FILE (default: the cordon.yaml found upwards)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	if *list {
		return trustList()
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
	if *revoke {
		n, err := spec.Revoke(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cordon trust --revoke: %v\n", err)
			return exitSetup
		}
		if n == 0 {
			fmt.Printf("%s was not trusted (store: %s)\n", path, spec.TrustStorePath())
			return exitOK
		}
		fmt.Printf("revoked the trust of %s (store: %s)\n", path, spec.TrustStorePath())
		return exitOK
	}
	if err := spec.Trust(path); err != nil {
		return configError(os.Stderr, err)
	}
	fmt.Printf("trusted %s as it is now (store: %s); any change to it ends the trust\n", path, spec.TrustStorePath())
	return exitOK
}

// trustList prints the trust store: state and path, one a line.
func trustList() int {
	entries, err := spec.TrustedConfigs()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon trust --list: %v\n", err)
		return exitSetup
	}
	if len(entries) == 0 {
		fmt.Printf("no trusted configs (store: %s)\n", spec.TrustStorePath())
		return exitOK
	}
	for _, e := range entries {
		fmt.Printf("%-8s %s\n", e.State, e.Path)
	}
	return exitOK
}
