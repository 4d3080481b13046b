package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cordon-run/cordon"
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
	allow    multiFlag
	env      multiFlag
	network  bool
	readonly bool
	// timeout, memory and pids are text: spec.ParseLimit reads them, as
	// it reads cordon.yaml's limits, so --pids 0 is refused as pids: 0 is.
	timeout, memory, pids string
}

func (f *overrideFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.mounts, "mount", "extra bind mount `SRC[:DST][:ro]` or type=bind,source=SRC,target=DST[,readonly] (repeatable)")
	fs.Var(&f.mounts, "v", "extra bind mount `SRC[:DST][:ro]`, as docker's -v (repeatable)")
	fs.Var(&f.mounts, "volume", "the same as -v")
	fs.Var(&f.allow, "allow", "let the sandbox reach `HOST[:PORT]` (repeatable; a sandbox without network gets only these)")
	fs.Var(&f.env, "e", "set `NAME=VALUE` in the sandbox, or pass the host's NAME (repeatable)")
	fs.Var(&f.env, "env", "the same as -e")
	fs.BoolVar(&f.network, "network", false, "give the sandbox network access")
	fs.BoolVar(&f.readonly, "readonly", false, "make the workspace and every mount read-only")
	fs.StringVar(&f.timeout, "timeout", "", "kill the whole sandbox after `DURATION` (e.g. 30s)")
	fs.StringVar(&f.memory, "memory", "", "memory limit `SIZE`, e.g. 512MiB (at least 6MiB)")
	fs.StringVar(&f.pids, "pids", "", "maximum number of processes `N`")
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

// overrides returns the flags as the spec's overrides; every limit flag
// given is checked by the validator cordon.yaml's limits use, and each
// problem names the flag and the fix.
func (f *overrideFlags) overrides() (spec.Overrides, error) {
	cwd, err := os.Getwd()
	o := spec.Overrides{Mounts: f.mounts, Dir: cwd, Network: f.network, Readonly: f.readonly, Memory: f.memory, Allow: f.allow, Env: f.env}
	errs := []error{err}
	for _, fl := range []struct{ name, text string }{{"timeout", f.timeout}, {"memory", f.memory}, {"pids", f.pids}} {
		if fl.text == "" {
			continue
		}
		l, err := spec.ParseLimit(fl.name, fl.text)
		var le *spec.LimitError
		if errors.As(err, &le) {
			errs = append(errs, fmt.Errorf("%w: --%s %s: %s; fix: %s, or leave the flag out for the config's limit",
				spec.ErrInvalidConfig, fl.name, fl.text, le.Problem, le.Fix))
			continue
		}
		o.Timeout, o.Pids = max(o.Timeout, l.Timeout), max(o.Pids, l.Pids)
	}
	return o, errors.Join(errs...)
}

// open builds the effective sandbox through the root package, which
// guards the control files, attaches and records: the base config, then
// each worker in turn, then the override flags (of may be nil). With ag,
// its --audit file joins the log and its attachments pass from the last
// worker's parent to it (without workers, to the sandbox itself).
func open(sf *sandboxFlags, of *overrideFlags, ag *agentFlags, via string) (*cordon.Project, *cordon.Sandbox, error) {
	cfg, err := sf.loadBase()
	if err != nil {
		return nil, nil, err
	}
	opts := []cordon.ProjectOption{cordon.WithFrontEnd(via), cordon.WithAuditWarning(warnAudit)}
	var attach []string
	if ag != nil {
		opts = append(opts, cordon.WithAuditFile(ag.audit), cordon.WithReportFile(ag.report))
		attach = ag.attach
	}
	p := cordon.NewProject(cfg, opts...)
	s, err := p.Sandbox()
	for i, wf := range sf.workers {
		var dopts []cordon.DeriveOption
		if i == len(sf.workers)-1 && len(attach) > 0 {
			dopts = append(dopts, cordon.Attach(attach...))
		}
		if err == nil {
			s, err = s.Worker(wf, dopts...)
		}
	}
	if err == nil && of != nil {
		var o spec.Overrides
		if o, err = of.overrides(); err == nil {
			s, err = s.Override(o)
		}
	}
	if err == nil && len(sf.workers) == 0 && len(attach) > 0 {
		s, err = s.AttachFiles(attach)
	}
	if err != nil {
		return nil, nil, err
	}
	return p, s, nil
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

// helpWanted is set when the command line asks for help (-h, -help or
// --help before any "--"): the usage then goes to stdout and the exit
// code is 0, as for every other tool's --help.
var helpWanted bool

// asksHelp reports whether args ask for help before a "--".
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// newFlagSet returns a flag set that reports its errors instead of exiting.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	if helpWanted {
		fs.SetOutput(os.Stdout)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: cordon %s %s\n\nflags:\n", name, usage)
		printFlags(fs)
	}
	return fs
}

// printFlags is flag.PrintDefaults with each flag as it is usually
// typed: --name, and -x for a one-letter flag (the flag package takes
// one dash or two for either).
func printFlags(fs *flag.FlagSet) {
	w := fs.Output()
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		arg, text := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if arg != "" && !strings.HasPrefix(text, "the same as ") {
			line += " " + arg
		}
		text = strings.ReplaceAll(text, "\n", "\n    \t")
		switch f.DefValue {
		case "", "false", "0", "[]":
		default:
			text += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, text)
	})
}
