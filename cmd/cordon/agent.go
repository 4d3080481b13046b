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
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.attach, "attach", "pass `PATH`, a file the parent sandbox can read, to the child read-only at the same path (repeatable; at most 16 files, 10 MiB in total)")
	fs.StringVar(&f.audit, "audit", "", "also append the audit log to `FILE` (JSON lines; the config's `audit:` file is always written)")
}

// prepare resolves the effective sandbox as open does, with the
// attachments and the audit log. A refused derivation or attachment (which
// the root package records) is printed and returned as exit 2.
func (f *agentFlags) prepare(sf *sandboxFlags, of *overrideFlags, via string) (*cordon.Sandbox, int) {
	_, s, err := open(sf, of, f, via)
	if err != nil {
		return nil, configError(os.Stderr, err)
	}
	return s, exitOK
}

// warnAudit reports a record a best-effort audit log could not take.
func warnAudit(err error) {
	fmt.Fprintf(os.Stderr, "cordon: WARNING: audit record not written (audit_required: false): %v\n", err)
}
