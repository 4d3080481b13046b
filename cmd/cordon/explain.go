package main

import (
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "explain", summary: "print the effective sandbox as a short table", run: explainMain})
}

func explainMain(args []string) int {
	fs := newFlagSet("explain", "[--config F] [--profile P] [--worker W]...")
	var sf sandboxFlags
	var of overrideFlags
	sf.register(fs)
	of.register(fs)
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	p, s, err := open(&sf, &of, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	cfg, sb := p.Config(), s.Spec()
	fmt.Printf("config:  %s\n", cfg.Source)
	fmt.Print(spec.Summarize(sb).Table())
	// What this machine's backend does with it, from the runner's one
	// table, as a run would decide.
	enf, how := s.Enforcement()
	fmt.Printf("backend: %s\n", enf.Backend)
	if how != "" {
		fmt.Printf("network: %s\n", how)
	}
	for _, d := range enf.RefusedDetails() {
		fmt.Printf("refused: %s\n", d)
	}
	for _, d := range enf.UnenforcedDetails() {
		fmt.Printf("not enforced: %s\n", d)
	}
	return exitOK
}
