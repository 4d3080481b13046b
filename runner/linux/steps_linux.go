package linux

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	// The devices controller must be registered for the device rules the
	// spec carries; without it the cgroup manager refuses them.
	_ "github.com/opencontainers/cgroups/devices"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/seccomp"
	"github.com/cordon-run/cordon/spec"
)

// setupStep is one step of building a sandbox: it fills in the run or
// returns an error, which ends the run as a setup_error (see setupFailed).
// A step that needs undoing registers it with onEnd.
type setupStep struct {
	name string
	run  func(*linuxRun) error
}

// buildSteps build the sandbox a run and a session share, in order, before
// anything of the command runs: Build ends with the container created and
// nothing running in it. A feature that must act on the sandbox adds its
// step here, at the one place where the order is visible: a step that edits
// the OCI spec goes after "plan", one that edits libcontainer's config
// (cgroup delegation) after "config".
var buildSteps = []setupStep{
	{"preflight", (*linuxRun).preflight},
	{"plan", (*linuxRun).plan},
	{"table", (*linuxRun).mountTable},
	{"state", (*linuxRun).beginState},
	{"cgroup", (*linuxRun).delegatedCgroup},
	{"record", (*linuxRun).recordRun},
	{"config", (*linuxRun).libcontainerConfig},
	{"network stack", (*linuxRun).prepareNetwork},
	{"seccomp", (*linuxRun).seccomp},
	{"create", (*linuxRun).create},
	{"deny walk", (*linuxRun).denyWalk},
}

// runSteps give a built sandbox a cold run's first process: cordon's init
// with the command. A session gives it its fork server instead (package
// session). A step that hands the process an extra descriptor (a
// seccomp-notify socket) goes after "process".
var runSteps = []setupStep{
	{"process", (*linuxRun).process},
	{"broker", (*linuxRun).broker},
	{"stdio", (*linuxRun).stdio},
}

// stepError is a set-up step's failure; step names it.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }

func (e *stepError) Unwrap() error { return e.err }

// build runs the build steps on run: the seam a run and a session share.
// On a failure it returns the step's error in a *stepError; what the steps
// built is undone by run.teardown either way.
func (run *linuxRun) build() error {
	return run.steps(buildSteps)
}

// steps runs steps in order, marking each phase.
func (run *linuxRun) steps(steps []setupStep) error {
	for _, s := range steps {
		if err := s.run(run); err != nil {
			return &stepError{step: s.name, err: err}
		}
		run.ph.mark(s.name)
	}
	return nil
}

// startedSteps run after the sandbox's init exists (its namespaces are
// there) and before it executes the command: libcontainer's Start-then-Exec
// split. A device or socket that must be moved into the sandbox before the
// command starts (a tun device and its network stack) goes here.
var startedSteps = []setupStep{
	{"rootfs", (*linuxRun).publishRootfs},
	{"cgroup events", (*linuxRun).watchEvents},
	{"network", (*linuxRun).network},
	{"deny watch", (*linuxRun).denyWatch},
}

// preflight refuses what must never be run (a mount that would show
// cordon's own state directory), reaps what crashed runs left, so that the
// plan sees the host as it will be, and names the run.
func (run *linuxRun) preflight() error {
	if err := run.r.checkStateHidden(run.req.Sandbox); err != nil {
		return err
	}
	st := run.r.state
	st.reapStale()
	st.reapRoots()
	if !run.r.rootless {
		st.sweepOrphanCgroups()
	}
	run.id = run.req.ID
	if run.id == "" {
		run.id = newRunID()
	}
	return nil
}

// plan decides what of the sandbox this backend enforces and translates
// the rest, in one call (Plan): a part it cannot enforce is refused, or,
// when the sandbox allows it, dropped (never widened) and reported.
func (run *linuxRun) plan() error {
	req, r := run.req, run.r
	run.cwd = req.Dir
	if run.cwd == "" {
		run.cwd = req.Sandbox.Root
	}
	ro := runner.RunOptions(r.backend(), run.id, r.state.rootfs(run.id), r.facts)
	ro.Links = req.Links
	if r.rootless {
		ro.CgroupsPath = runner.RootlessCgroupsPath(req.Sandbox, run.id, r.facts)
	}
	p, enf, err := runner.Plan(r.backend(), req.Sandbox, runner.Process(req.Args, run.cwd, req.TTY), ro, r.facts)
	run.res.Unenforced = enf.UnenforcedDetails()
	if err != nil {
		return err
	}
	if r.rootless && ro.CgroupsPath == "" && len(runner.LimitControllers(enf.Sandbox)) > 0 {
		// The table let limits through that no cgroup of this run holds
		// (the delegation changed between two looks): refuse rather than
		// hand libcontainer limits it would not enforce.
		return fmt.Errorf("%w: limits %s: no delegated cgroup for this run; %s",
			runner.ErrUnenforceable, strings.Join(runner.LimitControllers(enf.Sandbox), ", "), r.facts.RootlessDelegation().Fix())
	}
	for _, m := range run.res.Unenforced {
		run.warn("WARNING: not enforced: %s", m)
	}
	run.specPlan, run.eff, run.oci = p, enf.Sandbox, p.Spec
	return nil
}

// mountTable builds the run's mount table from its plan (the entries that
// hold deny and protect on what symlinks reach are the plan's, not walked
// again), and refuses a mount source reached through a symlink the
// sandbox could have planted, and a system the init cannot start in,
// before anything is made.
func (run *linuxRun) mountTable() error {
	table, err := mounts.NewPlanned(run.req.Sandbox, run.specPlan.Aliased)
	if err != nil {
		return fmt.Errorf("%w: mount table: %w", runner.ErrSetup, err)
	}
	run.table = table
	if err := table.CheckSources(); err != nil {
		return err
	}
	return checkInitRunnable(table, run.req.Sandbox)
}

// beginState takes this run's state directory and its rootfs skeleton
// (see rootfs_linux.go); the directory is removed when the run ends, and
// the skeleton is let go only after the container is.
func (run *linuxRun) beginState() error {
	st := run.r.state
	unlock, err := st.begin(run.id)
	if err != nil {
		return err
	}
	var root *sharedRoot
	if run.oci.Root != nil && run.oci.Root.Path == st.rootfs(run.id) {
		// cordon's own empty root (not a system: rootfs directory).
		if root, err = st.sharedRootfs(run.oci); err != nil {
			_ = st.cleanup(run.id)
			unlock()
			return err
		}
	}
	run.root = root
	run.onEnd(func() {
		run.ph.mark("run")
		if err := st.cleanupRun(run.id, run.container); err != nil {
			run.logCleanup(err)
		}
		root.release()
		unlock()
		run.ph.mark("cleanup")
	})
	return nil
}

// publishRootfs marks a rootfs skeleton this run made ready for others:
// the init has made every mount point in it.
func (run *linuxRun) publishRootfs() error {
	return run.root.publish()
}

// delegatedCgroup readies the user's delegated cgroup for a rootless run
// with limits (see cgroup.PrepareDelegated); the run's own cgroup, a child of it,
// is libcontainer's to create and remove. A scope from the user's systemd
// needs nothing here: systemd delegates it.
func (run *linuxRun) delegatedCgroup() error {
	p := ""
	if run.oci.Linux != nil {
		p = run.oci.Linux.CgroupsPath
	}
	if !run.r.rootless || p == "" || cgroup.IsSystemdCgroupsPath(p) {
		return nil
	}
	if err := cgroup.PrepareDelegated(filepath.Dir(p), runner.LimitControllers(run.eff)); err != nil {
		return fmt.Errorf("%w: %w; %s", runner.ErrUnenforceable, err, run.r.facts.RootlessDelegation().Fix())
	}
	return nil
}

// watchEvents watches a rootless run's systemd scope for OOM kills and
// refused forks while the run is live (see eventWatch): its cgroup may be
// gone when the run ends.
func (run *linuxRun) watchEvents() error {
	l := run.eff.Limits
	if !run.r.rootless || (l.Memory <= 0 && l.Pids <= 0) || run.oci.Linux == nil || !cgroup.IsSystemdCgroupsPath(run.oci.Linux.CgroupsPath) {
		return nil
	}
	st, err := run.container.State()
	if err != nil {
		return fmt.Errorf("container state: %w", err)
	}
	w, err := watchEvents(st.CgroupPaths[""], l.Memory > 0, l.Pids > 0)
	if err != nil {
		return err
	}
	run.events = w
	run.onEnd(w.Stop)
	return nil
}

// recordRun writes the run's record, so a crash of cordon cannot strand
// what the run holds (its state; no placeholder: the broker guards missing
// deny and protect paths without anything on the host).
func (run *linuxRun) recordRun() error {
	return run.r.state.writeRecord(runRecord{ID: run.id, PID: os.Getpid()})
}

// libcontainerConfig converts the OCI spec to libcontainer's config.
func (run *linuxRun) libcontainerConfig() error {
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:      run.id,
		Spec:            run.oci,
		NoNewKeyring:    false, // a fresh session keyring, not cordon's
		RootlessEUID:    run.r.rootless,
		RootlessCgroups: run.r.rootless,
		// A rootless run's scope from the user's systemd (see
		// rootlessCgroupsPath): libcontainer asks for it over D-Bus.
		UseSystemdCgroup: run.r.rootless && run.oci.Linux != nil && cgroup.IsSystemdCgroupsPath(run.oci.Linux.CgroupsPath),
	})
	if err != nil {
		return fmt.Errorf("libcontainer config: %w", err)
	}
	if r := config.Cgroups.Resources; config.Cgroups.Systemd && r != nil && r.Memory > 0 {
		// The OOM killer kills the allocating process and the sandbox
		// goes on, as in cordon's own cgroups; a user's systemd set to
		// stop a scope on an OOM kill (OOMPolicy=stop) is told not to.
		if r.Unified == nil {
			r.Unified = map[string]string{}
		}
		r.Unified["memory.oom.group"] = "0"
	}
	run.config = config
	return nil
}

// seccomp compiles the filter (once, then cached) for cordon's init to
// load before it starts the command, instead of libcontainer compiling it
// in every container's init. The filter hands the calls that change paths
// to the broker (see broker_linux.go), except in an overlay run that
// writes nowhere but its upper layer (spec.OverlayUnbrokered): the
// listener is still made and served, and never called.
func (run *linuxRun) seccomp() error {
	if run.config.Seccomp == nil {
		return fmt.Errorf("%w: the sandbox has no seccomp profile", runner.ErrSetup)
	}
	brokered := run.config.Seccomp
	if !spec.OverlayUnbrokered(run.eff) {
		brokered = brokeredSeccomp(run.config.Seccomp, run.eff.StrictDeny)
	}
	bpf, err := seccomp.Program(run.r.state.dir, brokered)
	if err == nil {
		run.seccompFlags, err = seccomp.LoadFlags(brokered)
		run.seccompFlags |= unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	}
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	run.bpf = bpf
	run.config.Seccomp = nil
	return nil
}

// create makes the container (its state; nothing runs yet).
func (run *linuxRun) create() error {
	c, err := libcontainer.Create(run.r.state.lcRoot(), run.id, run.config)
	if err != nil {
		return fmt.Errorf("create container: %w", err)
	}
	run.container = c
	return nil
}

// process builds the sandbox's first process: cordon's init, which loads
// the filter and executes the command, with the liveness pipe whose EOF
// tells it cordon died and the status pipe it reports its own failures on.
func (run *linuxRun) process() error {
	lp, err := NewProcess(run.oci.Process)
	if err != nil {
		return err
	}
	lp.Init = true
	lp.Env = append(handOverLoaderEnv(lp.Env), seccomp.EnvValue(run.bpf, run.seccompFlags))
	liveR, liveW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("liveness pipe: %w", err)
	}
	// Held until the run is over: when cordon dies, the init sees EOF.
	run.onEnd(func() { liveW.Close() })
	run.onEnd(func() { liveR.Close() })
	run.liveR = liveR
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("status pipe: %w", err)
	}
	run.onEnd(func() { statusW.Close() })
	run.onEnd(func() { statusR.Close() })
	run.statusR, run.statusW = statusR, statusW
	// fd 3 and fd 4 in the init (sandboxinit_linux.c).
	lp.ExtraFiles = []*os.File{liveR, statusW}
	lp.Args = initArgs(lp.Args)
	run.lp = lp
	return nil
}

// broker hands the init (fd 5) the socket it sends its seccomp listener
// over, and serves that listener from the moment it arrives: the init
// sends it before the command exists.
func (run *linuxRun) broker() error {
	l, err := newBrokerLink()
	if err != nil {
		return err
	}
	run.brk = l
	run.onEnd(func() { l.stop() })
	run.lp.ExtraFiles = append(run.lp.ExtraFiles, l.theirs)
	l.serving.Store(true)
	go l.serve(l.mine, run.policy(), run.brokerCreds())
	return nil
}

// stdio wires the command's stdio through pipes (or a console) cordon owns.
func (run *linuxRun) stdio() error {
	limit := run.req.Sandbox.Limits.Output
	run.stdout = runner.NewCappedWriter(run.req.Stdout, limit)
	run.stderr = runner.NewCappedWriter(run.req.Stderr, limit)
	run.tail = runner.NewTailBuffer(runner.StderrTail)
	out := io.Writer(run.stdout)
	if run.req.TTY {
		// A terminal carries stderr too: classification reads its tail.
		out = io.MultiWriter(run.stdout, run.tail)
	}
	s, err := newStdio(run.req, run.lp, out, io.MultiWriter(run.stderr, run.tail))
	if err != nil {
		return fmt.Errorf("stdio: %w", err)
	}
	run.io = s
	run.onEnd(s.close)
	return nil
}

// checkStateHidden refuses a sandbox that would show cordon's state
// directory to the command: that directory holds container state (with the
// hooks libcontainer runs on the host when it destroys a container), the
// seccomp cache and the placeholder registry, so a command that could write
// it could run code on the host or disable a later run's filter.
func (r *linuxRunner) checkStateHidden(sb *spec.Sandbox) error {
	state, err := filepath.EvalSymlinks(r.state.dir)
	if err != nil {
		state = r.state.dir
	}
	var sources []string
	if sb.Root != "" {
		sources = append(sources, sb.Root)
	}
	for _, m := range sb.Mounts {
		sources = append(sources, m.Source)
	}
	if sb.System.Kind == spec.SystemRootfs {
		sources = append(sources, sb.System.Rootfs)
	}
	for _, src := range sources {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			real = src
		}
		if real == "/" || state == real || strings.HasPrefix(state+"/", strings.TrimSuffix(real, "/")+"/") {
			return fmt.Errorf("%w: the mount of %s would show cordon's state directory %s to the sandbox; "+
				"mount a narrower directory, or point cordon at another state directory (XDG_RUNTIME_DIR or TMPDIR for rootless runs)",
				runner.ErrUnenforceable, src, r.state.dir)
		}
	}
	return nil
}
