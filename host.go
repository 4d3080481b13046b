package cordon

import (
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// This file is what the front ends ask of this host's backend besides
// running commands: what it can enforce, the plan a run would use, an OCI
// bundle, and the housekeeping of the state cordon keeps. The front ends
// call these and never the backend, so the backend is chosen here only.

// Capability is one row of what this host can enforce, as `cordon doctor`
// prints it.
type Capability = runner.Capability

// Enforcement is what this host's backend does with a sandbox: the features
// it refuses and the ones it cannot enforce, from the runner's one table.
type Enforcement = runner.Enforcement

// Bundle is an OCI bundle written for a stock runtime (runc, crun).
type Bundle = runnerlinux.Bundle

// Doctor lists what this host can enforce, and the rows among them that the
// default profile needs and this host lacks.
func Doctor() (caps, missing []Capability) {
	caps = runnerlinux.Doctor()
	return caps, runner.Missing(caps)
}

// Enforcement reports what this host's backend would refuse and what it
// would not enforce for the sandbox, and how a network allow list is
// enforced here ("" when the sandbox has none).
func (s *Sandbox) Enforcement() (enf Enforcement, network string) {
	facts := runnerlinux.Facts()
	enf = runner.Enforce(runner.LocalBackend(), s.sb, facts)
	return enf, runner.NetworkEnforcement(enf.Backend, s.sb, facts)
}

// Plan returns the OCI plan a run of args would use on this host, with the
// backend's fallbacks applied, and what it would not enforce.
func (s *Sandbox) Plan(args []string) (*spec.Plan, Enforcement, error) {
	return runner.SpecPlan(s.sb, args, runnerlinux.Facts())
}

// WriteBundle writes an OCI bundle (config.json and its rootfs skeleton) for
// args into dir, for a stock runtime to run unchanged.
func (s *Sandbox) WriteBundle(dir string, args []string) (*Bundle, error) {
	return runnerlinux.WriteBundle(dir, s.sb, args)
}

// Prewarm readies what the first run of this process would otherwise pay
// for (the cgroup hierarchy on cgroup v1). It is an optimisation only.
func Prewarm() { runnerlinux.PrewarmCgroups() }

// StateDir is the folder where the backend keeps the state of runs and
// sessions.
func StateDir() string { return runnerlinux.DefaultStateDir() }

// Reap removes what runs and sessions whose supervisor was killed left
// behind: container state and cgroups.
func Reap() error { return runnerlinux.Reap(runner.Options{}) }

// SetupFailure is the result of a command that never ran because err
// stopped it: res with the set-up failure's exit code, type and detail.
func SetupFailure(res Result, err error) Result { return runner.SetupFailure(res, err) }
