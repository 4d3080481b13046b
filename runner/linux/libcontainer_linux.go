package linux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/spec"
)

// The libcontainer backend, by concern: this file runs the pipeline,
// steps_linux.go lists the set-up steps, process_linux.go builds the
// command's process, stdio_linux.go wires its stdio, and outcome_linux.go
// starts, supervises and reads how the command ended.

// linuxRunner runs commands through runc's libcontainer.
type linuxRunner struct {
	state    *stateDir
	rootless bool
	resolver netguard.Resolver
	// facts are this host's, as the enforcement table and the plan read
	// them.
	facts runner.HostFacts
}

// New returns the libcontainer backend. As root it uses cgroups for limits;
// as any other user it runs rootless in a user namespace that maps the
// caller's uid and gid.
func New(opts runner.Options) (runner.Runner, error) {
	dir := opts.StateDir
	if dir == "" {
		dir = defaultStateDir()
	}
	st, err := openStateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", runner.ErrSetup, err)
	}
	return &linuxRunner{state: st, rootless: os.Geteuid() != 0, resolver: opts.Resolver, facts: Facts()}, nil
}

// Run implements Runner.
func (r *linuxRunner) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	start := time.Now()
	if req.Sandbox == nil || len(req.Args) == 0 || req.Args[0] == "" {
		return runner.Result{}, fmt.Errorf("%w: a sandbox and a command are required", runner.ErrBadRequest)
	}
	sum := spec.Summarize(req.Sandbox)
	res := runner.Result{Backend: string(r.backend()), FailureType: runner.FailureNone, Sandbox: &sum}
	res = r.run(ctx, req, res)
	res.DurationMS = time.Since(start).Milliseconds()
	return res, nil
}

// backend names this runner in the table of what backends cannot enforce.
func (r *linuxRunner) backend() runner.Backend {
	if r.rootless {
		return runner.BackendRootless
	}
	return runner.BackendLibcontainer
}

// linuxRun is one run while it is set up, supervised and torn down. The
// set-up steps fill it in order.
type linuxRun struct {
	r   *linuxRunner
	req runner.Request
	// res is the result so far: backend, summary, what is not enforced.
	res runner.Result
	ph  *phases
	// undo is run in reverse order when the run ends.
	undo []func()

	id    string
	table *mounts.Table
	// eff is the sandbox as built: req.Sandbox narrowed where it is not
	// enforced (never widened).
	eff *spec.Sandbox
	cwd string

	specPlan *spec.Plan
	// root is this run's hold on its rootfs skeleton.
	root         *sharedRoot
	oci          *specs.Spec
	config       *configs.Config
	bpf          []byte
	seccompFlags uint
	container    *libcontainer.Container
	lp           *libcontainer.Process
	// liveR is the init's end of the liveness pipe, closed once it runs.
	liveR *os.File
	// statusW is the init's end of its status pipe, closed once it runs;
	// statusR is cordon's, read when the init has exited.
	statusR, statusW *os.File
	io               *stdio
	// stdout and stderr cap the command's output; tail keeps the end of
	// its stderr for classification.
	// events, when set, watched the run's cgroup counters while it ran.
	events         *eventWatch
	stdout, stderr *runner.CappedWriter
	tail           *runner.TailBuffer
	// guard enforces the network allow list, when there is one;
	// netReady brings it from prepareNetwork to network, netRules is the
	// list.
	guard     *netguard.Guard
	netReady  chan preparedGuard
	netRules  []netguard.Rule
	netEvents *eventLog
	// netPremade: cordon made the sandbox's network namespace, and the
	// guard's device in it, before the init joined it.
	netPremade bool
	// brk brings the seccomp listener to the broker and serves it.
	brk *brokerLink
	// denyW covers what the host puts under a denied name mid-run.
	denyW *denyWatcher
}

func (r *linuxRunner) run(ctx context.Context, req runner.Request, res runner.Result) runner.Result {
	run := &linuxRun{r: r, req: req, res: res, ph: newPhases()}
	defer run.ph.log()
	defer run.teardown()
	if !r.rootless {
		cgroup.PrewarmCgroupLock()
	}
	if !initCalled.Load() {
		return run.setupFailed(fmt.Errorf("%w: %w", runner.ErrSetup, ErrNoInit))
	}
	if r.rootless && !userNamespacesAvailable() {
		if req.Sandbox.RequireOSSandbox {
			return run.setupFailed(fmt.Errorf("%w: user namespaces are disabled on this host, so a rootless sandbox cannot be built; "+
				"run as root, enable them (sysctl user.max_user_namespaces), or set require_os_sandbox: false to run with application-level checks only",
				runner.ErrUnenforceable))
		}
		table, err := mounts.NewLinked(req.Sandbox, req.Links)
		if err != nil {
			return run.setupFailed(fmt.Errorf("mount table: %w", err))
		}
		run.table = table
		return runUnsandboxed(ctx, req, run.res, table)
	}
	if err := run.build(); err != nil {
		return run.setupFailed(errors.Unwrap(err))
	}
	if err := run.steps(runSteps); err != nil {
		return run.setupFailed(errors.Unwrap(err))
	}
	if res, ok := run.start(); !ok {
		return res
	}
	run.ph.mark("start")
	return run.finish(run.supervise(ctx))
}

// setupFailed is the one place a set-up error becomes a result.
func (run *linuxRun) setupFailed(err error) runner.Result {
	return runner.SetupFailure(run.res, err)
}

// onEnd registers fn to run when the run ends, after everything
// registered later.
func (run *linuxRun) onEnd(fn func()) { run.undo = append(run.undo, fn) }

func (run *linuxRun) teardown() {
	for i := len(run.undo) - 1; i >= 0; i-- {
		run.undo[i]()
	}
}

// warn tells the caller something about the run on its stderr.
func (run *linuxRun) warn(format string, args ...any) {
	fmt.Fprintf(stderrOf(run.req), "cordon: "+format+"\n", args...)
}

func stderrOf(req runner.Request) io.Writer {
	if req.Stderr != nil {
		return req.Stderr
	}
	return io.Discard
}

// logCleanup reports a teardown that was incomplete.
func (run *linuxRun) logCleanup(err error) {
	logrus.WithField("run", run.id).WithError(err).Warn("cleanup after run")
	run.warn("warning: cleanup of run %s was incomplete: %v", run.id, err)
}
