package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/spec"
)

func init() {
	register(command{name: "explain", summary: "print the effective sandbox as a short table", run: explainMain})
}

func explainMain(args []string) int {
	fs := newFlagSet("explain", "[--config F] [--profile P] [--worker W]... [--json]")
	var sf sandboxFlags
	var of overrideFlags
	sf.register(fs)
	of.register(fs)
	asJSON := fs.Bool("json", false, "print the effective sandbox as JSON (the config, the sandbox, the backend and what it refuses or does not enforce)")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	p, s, err := open(&sf, &of, nil, cordon.FrontEndCLI)
	if err != nil {
		return configError(os.Stderr, err)
	}
	cfg, sb := p.Config(), s.Spec()
	// What this machine's backend does with it, from the runner's one
	// table, as a run would decide.
	enf, how := s.Enforcement()
	if *asJSON {
		return explainJSON(cfg.Source, spec.Summarize(sb), string(enf.Backend), how, enf.RefusedDetails(), enf.UnenforcedDetails())
	}
	fmt.Printf("config:  %s\n", cfg.Source)
	fmt.Print(spec.Summarize(sb).Table())
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

// explanation is `cordon explain --json`: what the table shows.
type explanation struct {
	Config     string       `json:"config"`
	Sandbox    spec.Summary `json:"sandbox"`
	Backend    string       `json:"backend"`
	Network    string       `json:"network_enforcement,omitempty"`
	Refused    []string     `json:"refused,omitempty"`
	Unenforced []string     `json:"unenforced,omitempty"`
}

func explainJSON(config string, sum spec.Summary, backend, how string, refused, unenforced []string) int {
	data, err := json.MarshalIndent(explanation{Config: config, Sandbox: sum, Backend: backend, Network: how,
		Refused: refused, Unenforced: unenforced}, "", "  ")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon explain: %v\n", err)
		return exitSetup
	}
	fmt.Println(string(data))
	return exitOK
}
