package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cordon-run/cordon/darwin"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
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
	_, sb, err := resolve(&sf, &of)
	if err != nil {
		return configError(os.Stderr, err)
	}
	switch *platform {
	case "darwin", "macos":
		profile, err := darwin.Profile(sb, darwin.ProfileOptions{Tag: "cordon-spec"})
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
	cwd := sb.Root
	if cwd == "" {
		cwd = "/"
	}
	rootless := os.Geteuid() != 0
	host := runner.ProbeHost()
	ro := spec.RunOptions{
		Rootfs:   "/run/cordon/runs/ID/rootfs",
		Rootless: rootless,
		HostUID:  uint32(os.Getuid()),
		HostGID:  uint32(os.Getgid()),
		Hostname: "cordon",
		Host:     &host,
	}
	if !rootless {
		ro.CgroupsPath = "/cordon/ID"
	}
	s, err := spec.ToOCI(sb, spec.Process{Args: argv, Cwd: cwd, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}, ro)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitConfig
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", err)
		return exitSetup
	}
	return exitOK
}
