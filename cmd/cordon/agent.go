package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cordon-run/cordon"
)

// agentFlags are the flags of the agent-facing commands (run, mcp,
// session start): attachments passed from the parent to the child and the
// audit log.
type agentFlags struct {
	attach multiFlag
	audit  string
	// report is the --report file of cordon run, kept out of the
	// sandbox's reach (cordon.WithReportFile).
	report string
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.attach, "attach", "pass `PATH`, a file the parent sandbox can read, to the child read-only at the same path (repeatable; at most 16 files, 10 MiB in total)")
	fs.StringVar(&f.audit, "audit", "", "also append the audit log to `FILE` (JSON lines; the config's `audit:` file is always written)")
}

// prepare resolves the effective sandbox as open does, with the
// attachments and the audit log. A refused derivation or attachment (which
// the root package records) is printed and returned as exit 2.
func (f *agentFlags) prepare(sf *sandboxFlags, of *overrideFlags, via string) (*cordon.Sandbox, int) {
	s, err := f.open(sf, of, via)
	if err != nil {
		return nil, configError(os.Stderr, err)
	}
	return s, exitOK
}

// open is prepare that returns the error instead of printing it.
func (f *agentFlags) open(sf *sandboxFlags, of *overrideFlags, via string) (*cordon.Sandbox, error) {
	_, s, err := open(sf, of, f, via)
	return s, err
}

// warnAudit reports a record a best-effort audit log could not take.
func warnAudit(err error) {
	fmt.Fprintf(os.Stderr, "cordon: WARNING: audit record not written (audit_required: false): %v\n", err)
}
