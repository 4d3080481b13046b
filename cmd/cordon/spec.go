package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "spec", summary: "print the OCI config.json (or the macOS Seatbelt profile) for a sandbox", run: specMain})
}

func specMain(args []string) int {
	fs := newFlagSet("spec", "[--config F] [--profile P] [--worker W]... [--platform linux|darwin] -- CMD...")
	var sf sandboxFlags
	var of overrideFlags
	sf.register(fs)
	of.register(fs)
	platform := fs.String("platform", "linux", "`PLATFORM` to generate for: linux (OCI config.json) or darwin (Seatbelt profile)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	_, s, err := open(&sf, &of, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	switch *platform {
	case "darwin", "macos":
		profile, err := s.SeatbeltProfile("cordon-spec")
		if err != nil {
			fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
			return exitConfig
		}
		fmt.Print(profile)
		return exitOK
	case "linux":
	default:
		fmt.Fprintf(os.Stderr, "cordon spec: unknown --platform %q; fix: linux or darwin\n", *platform)
		return exitConfig
	}
	argv := fs.Args()
	if len(argv) == 0 {
		argv = []string{"sh"}
	}
	// The plan a run would use: the runner's table of what this backend
	// cannot enforce decides the fallbacks, so the spec shows them.
	plan, enf, err := s.Plan(argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitConfig
	}
	for _, m := range enf.UnenforcedDetails() {
		fmt.Fprintf(os.Stderr, "cordon: WARNING: not enforced: %s\n", m)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(plan.Spec); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	return exitOK
}
