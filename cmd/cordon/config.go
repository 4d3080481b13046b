package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cordon-run/cordon/spec"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// sandboxFlags are the flags every command uses to name its sandbox.
type sandboxFlags struct {
	config  string
	profile string
	workers multiFlag
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "sandbox config `FILE` (default: cordon.yaml found upwards from the current directory, else the workspace profile)")
	fs.StringVar(&f.profile, "profile", "", "built-in `PROFILE`: "+strings.Join(spec.ProfileNames(), ", "))
	fs.Var(&f.workers, "worker", "worker `FILE` (*.worker.yaml); repeat once per delegation level, outermost first")
}

// overrideFlags are the run-time flags that adjust the sandbox.
type overrideFlags struct {
	mounts   multiFlag
	network  bool
	readonly bool
	timeout  time.Duration
	memory   string
	pids     int64
}

func (f *overrideFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.mounts, "mount", "extra bind mount `SRC[:DST][:ro]` (repeatable)")
	fs.BoolVar(&f.network, "network", false, "give the sandbox network access")
	fs.BoolVar(&f.readonly, "readonly", false, "make the workspace and every mount read-only")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill the whole sandbox after `DURATION` (e.g. 30s)")
	fs.StringVar(&f.memory, "memory", "", "memory limit, e.g. 512MiB")
	fs.Int64Var(&f.pids, "pids", 0, "maximum number of processes")
}

// loadBase resolves the base config: --config, then --profile, then a
// cordon.yaml found upwards from the current directory, then the built-in
// workspace profile.
func (f *sandboxFlags) loadBase() (*spec.Config, error) {
	if f.config != "" && f.profile != "" {
		return nil, fmt.Errorf("%w: --config and --profile are exclusive; fix: pass one of them", spec.ErrInvalidConfig)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	switch {
	case f.config != "":
		return spec.Load(f.config)
	case f.profile != "":
		return spec.Profile(f.profile, cwd)
	}
	p, err := spec.DiscoverTrusted(cwd)
	if err != nil {
		return nil, err
	}
	if p != "" {
		return spec.Load(p)
	}
	return spec.Profile("workspace", cwd)
}

// resolve returns the config and the effective sandbox: the base, derived
// through each worker in turn, then adjusted by the override flags. Without
// a worker chain the flags change the base freely; after a chain they may
// only narrow it, like any other derivation.
func resolve(sf *sandboxFlags, of *overrideFlags) (*spec.Config, *spec.Sandbox, error) {
	cfg, err := sf.loadBase()
	if err != nil {
		return nil, nil, err
	}
	sb := cfg.Sandbox.Clone()
	if of != nil && len(sf.workers) == 0 {
		if err := of.widen(sb); err != nil {
			return nil, nil, err
		}
	}
	for _, wf := range sf.workers {
		w, err := spec.LoadWorker(wf)
		if err != nil {
			return nil, nil, err
		}
		sb, err = spec.Derive(sb, w, cfg.Delegation.MaxDepth)
		if err != nil {
			return nil, nil, err
		}
	}
	spec.GuardControlFiles(sb, append([]string{cfg.Source}, sf.workers...), []string{cfg.Audit})
	if of != nil {
		if len(sf.workers) > 0 && (of.network || len(of.mounts) > 0) {
			return nil, nil, fmt.Errorf("%w: --network and --mount would widen the sandbox the worker chain derived; "+
				"fix: declare them in the project config, or drop the flag", spec.ErrWidening)
		}
		if err := of.narrow(sb); err != nil {
			return nil, nil, err
		}
	}
	return cfg, sb, nil
}

// widen applies the flags that may add access (only without a worker chain).
func (f *overrideFlags) widen(sb *spec.Sandbox) error {
	if f.network {
		sb.Network = spec.Network{Enabled: true}
	}
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	var errs []error
	for i, m := range f.mounts {
		mt, err := spec.ParseMount(m, cwd)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: --mount #%d %q: %w", spec.ErrInvalidConfig, i+1, m, err))
			continue
		}
		for _, existing := range sb.Mounts {
			if existing.Target == mt.Target {
				errs = append(errs, fmt.Errorf("%w: --mount %q: target %s is already mounted; fix: pick another target", spec.ErrInvalidConfig, m, mt.Target))
			}
		}
		if mt.Target == sb.Root {
			errs = append(errs, fmt.Errorf("%w: --mount %q: target %s is the workspace root; fix: pick another target", spec.ErrInvalidConfig, m, mt.Target))
		}
		sb.Mounts = append(sb.Mounts, mt)
	}
	return errors.Join(errs...)
}

// narrow applies the flags that can only take access away or lower limits.
// A limit flag may lower a limit of the sandbox but never raise it.
func (f *overrideFlags) narrow(sb *spec.Sandbox) error {
	if f.readonly {
		sb.Readonly = true
		for i := range sb.Mounts {
			sb.Mounts[i].Readonly = true
		}
	}
	var errs []error
	if f.timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: --timeout must be above 0", spec.ErrInvalidConfig))
	} else if f.timeout > 0 {
		if sb.Limits.Timeout > 0 && f.timeout > sb.Limits.Timeout && len(sb.Lineage) > 0 {
			errs = append(errs, fmt.Errorf("%w: --timeout %s is above the derived sandbox's %s", spec.ErrWidening, f.timeout, sb.Limits.Timeout))
		} else {
			sb.Limits.Timeout = f.timeout
		}
	}
	if f.memory != "" {
		n, err := spec.ParseBytes(f.memory)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: --memory %q: %w; fix: write it like 512MiB", spec.ErrInvalidConfig, f.memory, err))
		case n <= 0:
			errs = append(errs, fmt.Errorf("%w: --memory must be above 0", spec.ErrInvalidConfig))
		case sb.Limits.Memory > 0 && n > sb.Limits.Memory && len(sb.Lineage) > 0:
			errs = append(errs, fmt.Errorf("%w: --memory %s is above the derived sandbox's %s", spec.ErrWidening, f.memory, spec.FormatBytes(sb.Limits.Memory)))
		default:
			sb.Limits.Memory = n
		}
	}
	if f.pids < 0 {
		errs = append(errs, fmt.Errorf("%w: --pids must be above 0", spec.ErrInvalidConfig))
	} else if f.pids > 0 {
		if sb.Limits.Pids > 0 && f.pids > sb.Limits.Pids && len(sb.Lineage) > 0 {
			errs = append(errs, fmt.Errorf("%w: --pids %d is above the derived sandbox's %d", spec.ErrWidening, f.pids, sb.Limits.Pids))
		} else {
			sb.Limits.Pids = f.pids
		}
	}
	return errors.Join(errs...)
}

// configError prints a config error, one problem a line, and returns the
// exit code for it.
func configError(w io.Writer, err error) int {
	heading := "cordon: invalid configuration:"
	if errors.Is(err, spec.ErrUntrusted) {
		heading = "cordon: refused:"
	}
	if errors.Is(err, spec.ErrWidening) {
		heading = "cordon: refused: the worker chain asks for more than its parent allows (a child can only narrow):"
	}
	fmt.Fprintln(w, heading)
	for _, line := range splitJoined(err) {
		fmt.Fprintf(w, "  - %s\n", line)
	}
	return exitConfig
}

// splitJoined flattens an errors.Join tree into its messages.
func splitJoined(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, splitJoined(e)...)
		}
		return out
	}
	return strings.Split(err.Error(), "\n")
}

// newFlagSet returns a flag set that reports its errors instead of exiting.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cordon %s %s\n\nflags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}
