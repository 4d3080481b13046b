package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "doctor", summary: "print what this host can enforce (exit 1 when the default profile cannot run here)", run: doctorMain})
}

func doctorMain(args []string) int {
	fs := newFlagSet("doctor", "[--json]")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	caps, missing := cordon.Doctor()
	code := exitOK
	if len(missing) > 0 {
		code = exitDenied
	}
	if *jsonOut {
		data, _ := json.MarshalIndent(caps, "", "  ")
		fmt.Println(string(data))
		return code
	}
	for _, c := range caps {
		mark := "ok  "
		if !c.OK {
			mark = "NO  "
		}
		fmt.Printf("%s %-28s %s\n", mark, c.Name, c.Detail)
	}
	for _, c := range missing {
		fmt.Fprintf(os.Stderr, "cordon doctor: the default profile cannot run here: %s: %s\n", c.Name, c.Detail)
	}
	return code
}
