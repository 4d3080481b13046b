package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

func init() {
	register(command{name: "bundle", summary: "write an OCI bundle (config.json and rootfs) that runc and crun run unchanged", run: bundleMain})
}

func bundleMain(args []string) int {
	fs := newFlagSet("bundle", "DIR [--config F] [--profile P] [--worker W]... [run's sandbox flags] -- CMD [ARG...]")
	var sf sandboxFlags
	var of overrideFlags
	sf.register(fs)
	of.register(fs)
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			_ = fs.Parse(args)
			return exitOK
		}
		fmt.Fprintln(os.Stderr, "cordon bundle: give the bundle directory first; fix: cordon bundle DIR [flags] -- CMD [ARG...]")
		return exitConfig
	}
	dir := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return exitConfig
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "cordon bundle: no command given; fix: cordon bundle DIR [flags] -- CMD [ARG...]")
		return exitConfig
	}
	_, s, err := open(&sf, &of, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	b, err := s.WriteBundle(dir, argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon bundle: %v\n", err)
		return exitConfig
	}
	for _, o := range b.OnlyCordon {
		fmt.Fprintf(os.Stderr, "cordon bundle: only cordon run enforces: %s\n", o)
	}
	fmt.Printf("wrote %s; run it with: runc run --bundle %s ID (or crun)\n", b.Dir, b.Dir)
	return exitOK
}
