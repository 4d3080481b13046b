package linux

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/opencontainers/runc/libcontainer"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
	"github.com/cordon-run/cordon/runner/linux/internal/seccomp"
	"github.com/cordon-run/cordon/runner/linux/internal/session"
	"github.com/cordon-run/cordon/spec"
)

// StartSession implements SessionStarter: it builds the sandbox exactly as
// Run would (build), with cordon's fork server as PID 1 (package session),
// and returns once that server has loaded the seccomp filter and is ready
// to run commands.
func (r *linuxRunner) StartSession(ctx context.Context, req runner.SessionRequest) (runner.Session, error) {
	if req.Sandbox == nil {
		return nil, fmt.Errorf("%w: a session needs a sandbox", runner.ErrBadRequest)
	}
	if !initCalled.Load() {
		return nil, fmt.Errorf("%w: %w", runner.ErrSetup, ErrNoInit)
	}
	sb := req.Sandbox.Clone()
	if req.ID == "" {
		req.ID = newRunID()
	}
	reaper, err := startSessionReaper(r.state.dir, req.ID, req.LockedDir)
	if err != nil {
		return nil, fmt.Errorf("%w: the session's reaper: %w", runner.ErrSetup, err)
	}
	run := &linuxRun{r: r, ph: newPhases(), req: runner.Request{
		Sandbox: sb, Args: []string{"/proc/self/exe", pid1.SessionInitArg}, ID: req.ID, Stderr: req.Stderr,
		Links: req.Links,
	}}
	b := sessionBuilt{run}
	if err := r.buildSession(run); err != nil {
		_ = b.Teardown()
		reaper.done()
		return nil, err
	}
	return session.Start(ctx, req, session.Config{
		Sandbox: sb, Built: b, Backend: string(r.backend()), Unenforced: run.res.Unenforced, CleanedUp: reaper.done,
	})
}

// buildSession builds a session's sandbox: a cold run's (build), whose
// first process the session makes its fork server.
func (r *linuxRunner) buildSession(run *linuxRun) error {
	if !r.rootless {
		cgroup.PrewarmCgroupLock()
	}
	if r.rootless && !userNamespacesAvailable() {
		return fmt.Errorf("%w: user namespaces are disabled on this host, so a rootless session cannot be built; run as root or enable them (sysctl user.max_user_namespaces)", runner.ErrUnenforceable)
	}
	if err := run.build(); err != nil {
		var se *stepError
		if errors.Is(err, runner.ErrSetup) || errors.Is(err, runner.ErrUnenforceable) || !errors.As(err, &se) {
			return errors.Unwrap(err)
		}
		return fmt.Errorf("%w: %s: %w", runner.ErrSetup, se.step, se.err)
	}
	// The session's broker, served from the control socket (Broker); it
	// stops first when the session ends, before the container goes.
	run.brk = &brokerLink{done: make(chan struct{})}
	run.onEnd(func() { run.brk.stop() })
	return nil
}

// sessionBuilt is a session's built sandbox (session.Built): the run
// whose build steps made it.
type sessionBuilt struct{ run *linuxRun }

func (b sessionBuilt) ID() string                         { return b.run.id }
func (b sessionBuilt) Effective() *spec.Sandbox           { return b.run.eff }
func (b sessionBuilt) Table() *mounts.Table               { return b.run.table }
func (b sessionBuilt) Container() *libcontainer.Container { return b.run.container }

func (b sessionBuilt) Process() (*libcontainer.Process, error) { return NewProcess(b.run.oci.Process) }

func (b sessionBuilt) SeccompEnv() string { return seccomp.EnvValue(b.run.bpf, b.run.seccompFlags) }

// Started runs the started steps on the session's init lp.
func (b sessionBuilt) Started(lp *libcontainer.Process) error {
	b.run.lp = lp
	for _, st := range startedSteps {
		if err := st.run(b.run); err != nil {
			return &stepError{step: st.name, err: err}
		}
	}
	return nil
}

// Broker serves the listener the session's init sends on its control
// socket with the run's policy, and tells obs of each refusal.
func (b sessionBuilt) Broker(conn *os.File, obs broker.Observer) func() error {
	run := b.run
	run.brk.serving.Store(true)
	return func() error {
		run.brk.serve(conn, sessionPolicy{run.policy(), obs}, run.brokerCreds())
		return run.brk.err
	}
}

// sessionPolicy is a session's broker policy: brokerPolicy's rules, and
// the record of each exec's refusals.
type sessionPolicy struct {
	brokerPolicy
	w broker.Observer
}

// Denied implements broker.Observer.
func (p sessionPolicy) Denied(d broker.Denial) { p.w.Denied(d) }

func (b sessionBuilt) ExplainBroker(d []broker.Denial) runner.Explainer { return brokerDenials(d) }

func (b sessionBuilt) NetMark() func(*runner.Result) {
	mark := b.run.netMark()
	return func(res *runner.Result) { b.run.netSince(res, mark) }
}

func (b sessionBuilt) UnreportedNetwork() []netguard.Event {
	if b.run.netEvents == nil {
		return nil
	}
	return b.run.netEvents.take()
}

// Teardown runs the run's undo steps: the container, its cgroups,
// placeholders and state directory, then the lock.
func (b sessionBuilt) Teardown() error {
	b.run.teardown()
	if id := b.run.id; id != "" {
		if _, err := os.Stat(b.run.r.state.runDir(id)); err == nil {
			return fmt.Errorf("%w: cleanup of session %s was incomplete", runner.ErrSetup, id)
		}
	}
	return nil
}
