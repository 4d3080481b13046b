package main

import (
	"encoding/json"
	"fmt"

	"github.com/cordon-run/cordon/runner"
)

func init() {
	register(command{name: "doctor", summary: "print what this host can enforce", run: doctorMain})
}

func doctorMain(args []string) int {
	fs := newFlagSet("doctor", "[--json]")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	caps := runner.Doctor()
	if *jsonOut {
		data, _ := json.MarshalIndent(caps, "", "  ")
		fmt.Println(string(data))
		return exitOK
	}
	for _, c := range caps {
		mark := "ok  "
		if !c.OK {
			mark = "NO  "
		}
		fmt.Printf("%s %-28s %s\n", mark, c.Name, c.Detail)
	}
	return exitOK
}
