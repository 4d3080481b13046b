package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// agentFlags are the flags of the agent-facing commands (run, mcp):
// attachments passed from the parent to the child and the audit log.
type agentFlags struct {
	attach multiFlag
	audit  string
}

func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.attach, "attach", "pass `PATH`, a file the parent sandbox can read, to the child read-only at the same path (repeatable; at most 16 files, 10 MiB in total)")
	fs.StringVar(&f.audit, "audit", "", "also append the audit log to `FILE` (JSON lines; the config's `audit:` file is always written)")
}

// prepare resolves the effective sandbox as resolve does, adds the
// attachments, and returns it with its audit log. A refused derivation or
// attachment is recorded in the log, printed, and returned as exit 2.
func (f *agentFlags) prepare(sf *sandboxFlags, of *overrideFlags, via string) (*spec.Sandbox, *audit.Log, int) {
	cfg, sb, err := resolve(sf, of)
	if err != nil {
		f.recordRefusal(sf, via, nil, err)
		return nil, nil, configError(os.Stderr, err)
	}
	spec.GuardControlFiles(sb, nil, []string{f.audit})
	log := audit.New(via, cfg.Audit, f.audit)
	if !cfg.AuditRequired {
		log.BestEffort(func(err error) {
			fmt.Fprintf(os.Stderr, "cordon: WARNING: audit record not written (audit_required: false): %v\n", err)
		})
	}
	if len(f.attach) > 0 {
		parent, err := parentSandbox(sf, sb)
		if err == nil {
			sb, err = withAttachments(parent, sb, f.attach)
		}
		if err != nil {
			if aerr := log.Denied(parent, err); aerr != nil {
				fmt.Fprintf(os.Stderr, "cordon: %v\n", aerr)
			}
			return nil, nil, configError(os.Stderr, err)
		}
	}
	return sb, log, exitOK
}

// recordRefusal writes the denials of a failed resolve to the audit log,
// which it finds without the failing worker chain: the --audit file and the
// base config's `audit:` file.
func (f *agentFlags) recordRefusal(sf *sandboxFlags, via string, sb *spec.Sandbox, err error) {
	paths := []string{f.audit}
	if cfg, lerr := sf.loadBase(); lerr == nil {
		paths = append(paths, cfg.Audit)
	}
	if aerr := audit.New(via, paths...).Denied(sb, err); aerr != nil {
		fmt.Fprintf(os.Stderr, "cordon: %v\n", aerr)
	}
}

// parentSandbox returns the sandbox before the worker chain's last level:
// the one that passes attachments to the child. Without a worker chain the
// sandbox passes them to itself.
func parentSandbox(sf *sandboxFlags, child *spec.Sandbox) (*spec.Sandbox, error) {
	if len(sf.workers) == 0 {
		return child, nil
	}
	p := *sf
	p.workers = append(multiFlag(nil), sf.workers[:len(sf.workers)-1]...)
	_, sb, err := resolve(&p, nil)
	return sb, err
}

// withAttachments checks paths in parent's sandbox with the default policy
// and adds them to child read-only.
func withAttachments(parent, child *spec.Sandbox, paths []string) (*spec.Sandbox, error) {
	t, err := mounts.New(parent)
	if err != nil {
		return nil, err
	}
	ms, err := attach.Resolve(t, paths, attach.DefaultPolicy())
	if err != nil {
		return nil, err
	}
	return attach.Apply(child, ms)
}

// startRun records the start of a run; when it cannot, it prints why and
// returns exit 125, and the command must not start.
func startRun(log *audit.Log, sb *spec.Sandbox, argv []string) (*audit.Run, int) {
	var policy runner.Policy
	if t, err := mounts.New(sb); err == nil {
		policy = t
	}
	run, err := log.Start(sb, argv, policy)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cordon: the command was not started: %v\n", err)
		return nil, exitSetup
	}
	return run, exitOK
}

// finishRun records the end of a run. When it cannot, it prints why and
// returns exit 125: the command ran, but the run is not on record.
func finishRun(run *audit.Run, res runner.Result) int {
	if err := run.Finish(res); err != nil {
		fmt.Fprintf(os.Stderr, "cordon: the command ran (exit %d) but its result could not be recorded: %v\n", res.ExitCode, err)
		return exitSetup
	}
	return exitOK
}

// setupResult is the result recorded for a run the runner could not attempt.
func setupResult(err error) runner.Result {
	return runner.Result{ExitCode: exitSetup, FailureType: runner.FailureSetupError, FailureDetail: err.Error()}
}
