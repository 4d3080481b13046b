package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "check", summary: "ask whether the sandbox allows reading or writing a path (exit 0 yes, 1 no)", run: checkMain})
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
	// The table answers without recording: a check asks, it is not refused.
	t := s.Files().Table()
	if err := t.Check(rest[1], rest[0] == "write"); err != nil {
		fmt.Println(err)
		return exitDenied
	}
	host, _ := t.Resolve(rest[1])
	if rest[0] == "write" {
		host, _ = t.ResolveWrite(rest[1])
	}
	fmt.Printf("allowed: %s %s (host path %s)\n", rest[0], rest[1], host)
	return exitOK
}
