package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "check", summary: "ask whether the sandbox allows reading or writing a path (exit 0 yes, 1 no, 3 for commands but not the file tools)", run: checkMain})
}

func checkMain(args []string) int {
	fs := newFlagSet("check", "[--config F] [--profile P] [--worker W]... read|write PATH")
	var sf sandboxFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	rest := fs.Args()
	if len(rest) != 2 || (rest[0] != "read" && rest[0] != "write") {
		fmt.Fprintln(os.Stderr, "cordon check: want `read PATH` or `write PATH`")
		return exitConfig
	}
	_, s, err := open(&sf, nil, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	a := s.Access(rest[1], rest[0] == "write")
	op, path := rest[0], rest[1]
	switch {
	case a.Commands != nil:
		fmt.Println(a.Commands)
		return exitDenied
	case a.Tools != nil:
		where := "host path " + a.Host
		if a.Synthetic != "" {
			where = "the sandbox's own " + a.Synthetic
		}
		fmt.Printf("allowed for commands: %s %s (%s); refused by the file tools: %v\n", op, path, where, a.Tools)
		return exitCommandsOnly
	}
	fmt.Printf("allowed: %s %s (host path %s)\n", op, path, a.Host)
	return exitOK
}
