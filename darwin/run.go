package darwin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// The runner's pure parts: the command line, the environment, the private
// temporary directory and the classification of an outcome. They build and
// are tested on every OS; runner_darwin.go only executes them.

// SandboxExec is the program that applies a profile and runs a command.
const SandboxExec = "/usr/bin/sandbox-exec"

// DefaultPath is the PATH of a sandboxed process that passes or sets none.
const DefaultPath = "/usr/bin:/bin:/usr/sbin:/sbin"

// BackendName names this backend in a Result.
const BackendName = "seatbelt"

// fsizeScript sets RLIMIT_FSIZE, soft then hard, and runs the rest of its
// arguments. It runs outside the sandbox, before sandbox-exec, because a
// process cannot be given a lower limit between fork and exec from Go.
// Lowering the hard limit too keeps the sandboxed process from raising its
// own. POSIX sh counts in 512-byte blocks. Its arguments are positional
// parameters, never part of the script.
const fsizeScript = `ulimit -S -f "$1" && ulimit -H -f "$1" && shift && exec "$@"`

// withTempDir returns a copy of sb with dir, the run's private temporary
// directory, added as a read-write mount: macOS has no private /tmp, so
// TMPDIR and HOME point there instead.
func withTempDir(sb *spec.Sandbox, dir string) *spec.Sandbox {
	c := sb.Clone()
	c.Mounts = append(c.Mounts, spec.Mount{Source: dir, Target: dir})
	return c
}

// fileSizeBlocks converts a byte limit to the 512-byte blocks of `ulimit
// -f`, rounding down so that the limit is never exceeded.
func fileSizeBlocks(bytes int64) int64 { return bytes / 512 }

// commandLine returns the argv that runs args under profile, with
// RLIMIT_FSIZE set to fileSize bytes when it is above zero.
func commandLine(profile string, args []string, fileSize int64) ([]string, error) {
	if len(args) == 0 || args[0] == "" {
		return nil, fmt.Errorf("%w: no command", ErrBadRequest)
	}
	if strings.HasPrefix(args[0], "-") {
		// sandbox-exec would read it as one of its own options.
		return nil, fmt.Errorf("%w: command %q starts with '-'; give its path (./%s)", ErrBadRequest, args[0], args[0])
	}
	argv := append([]string{SandboxExec, "-p", profile}, args...)
	if fileSize <= 0 {
		return argv, nil
	}
	return append([]string{"/bin/sh", "-c", fsizeScript, "cordon-fsize", strconv.FormatInt(fileSizeBlocks(fileSize), 10)}, argv...), nil
}

// processEnv builds the environment of the sandboxed process: the host
// variables named in sb.Env.Pass that lookup finds, then sb.Env.Set, which
// wins. PATH defaults to DefaultPath, and HOME and TMPDIR to tmp, the run's
// private directory, because the host's home is not in the sandbox. proxy
// are the variables of the run's proxy (netguard.Proxy.Env), for a
// sandbox with an allow list: they win over both, since a client that
// went around the proxy would only fail. The result is sorted.
func processEnv(sb *spec.Sandbox, tmp string, lookup func(string) (string, bool), proxy ...string) []string {
	env := map[string]string{}
	for _, name := range sb.Env.Pass {
		if v, ok := lookup(name); ok {
			env[name] = v
		}
	}
	for k, v := range sb.Env.Set {
		env[k] = v
	}
	for _, kv := range proxy {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	defaults := map[string]string{"PATH": DefaultPath, "HOME": tmp, "TMPDIR": tmp}
	for k, v := range defaults {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// workDir is the command's working directory: the request's, else the
// workspace, else the private temporary directory.
func workDir(req runner.Request, tmp string) string {
	switch {
	case req.Dir != "":
		return req.Dir
	case req.Sandbox != nil && req.Sandbox.Root != "":
		return req.Sandbox.Root
	default:
		return tmp
	}
}

// logShowArgs are the arguments of the `log` command that fetches this
// run's denials from the unified log, from start on. The tag's alphabet
// (tagPattern) cannot break out of the predicate's string, and `log show`
// reads --start in local time.
func logShowArgs(tag string, start time.Time) []string {
	return []string{"show", "--style", "ndjson", "--info",
		"--start", start.Local().Format("2006-01-02 15:04:05"),
		"--predicate", `eventMessage CONTAINS "` + tag + `"`}
}

// outcome is what the runner observed of one run.
type outcome struct {
	// StartErr is a failure to set up or start the run.
	StartErr error
	// ExitCode is the command's exit status (128+n after signal n).
	ExitCode int
	// Signal names the signal that ended the command, or "".
	Signal string
	// TimedOut is true when the sandbox's timeout killed the command.
	TimedOut bool
	// Canceled is true when the caller's context ended the run.
	Canceled bool
	// Interrupted is true when it was a second interrupt (^C, SIGINT or
	// SIGTERM).
	Interrupted bool
	// Stderr is the tail of the command's stderr.
	Stderr string
	// LogDenials are this run's denials from the unified log.
	LogDenials []Denial
	// Cwd is the command's working directory.
	Cwd string
	// Duration is the run's wall time.
	Duration time.Duration
	// NetDenials are the denials of the run's proxy (the first ones) and
	// NetDenialCount how many there were: cordon's own record, which
	// explains a failure before anything the command printed.
	NetDenials     []netguard.Event
	NetDenialCount int
}

// sandboxExecFailure matches sandbox-exec's report that it could not run
// the command.
var sandboxExecFailure = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sandbox-exec: execvp\(\) of '(.*)' failed: (.*)$`) })

// newResult is a Result with the fields every outcome shares.
func newResult(sb *spec.Sandbox, degraded []string, d time.Duration) runner.Result {
	res := runner.Result{Backend: BackendName, DurationMS: d.Milliseconds(), Unenforced: append([]string(nil), degraded...)}
	if sb != nil {
		s := spec.Summarize(sb)
		res.Sandbox = &s
	}
	return res
}

// classify turns an outcome into a Result with the classifier every
// backend shares, asking Seatbelt's own explanations around the policy's:
// sandbox-exec's report that it could not run the command, the denials the
// command's stderr names, the policy's reading of that stderr, and last the
// unified log's denials. policy is the run's mount table; sb is the sandbox
// as requested (its summary goes in the result) and degraded what was not
// enforced.
func classify(sb *spec.Sandbox, degraded []string, policy runner.Policy, timeout time.Duration, o outcome) runner.Result {
	ro := runner.Outcome{
		SetupErr:    o.StartErr,
		ExitCode:    o.ExitCode,
		Signal:      o.Signal,
		TimedOut:    o.TimedOut,
		Canceled:    o.Canceled,
		Interrupted: o.Interrupted,
		Timeout:     timeout,
		Stderr:      o.Stderr,
		Cwd:         o.Cwd,
		// The wrapper that sets RLIMIT_FSIZE execs the command, so a
		// SIGXFSZ reaches the wait status as it does on Linux.
		FileSizeLimit: sb.Limits.FileSize,
	}
	return runner.Classify(newResult(sb, degraded, o.Duration), ro,
		func(ro runner.Outcome, res *runner.Result) bool {
			first := strings.TrimSpace(strings.SplitN(strings.TrimLeft(ro.Stderr, "\n"), "\n", 2)[0])
			if !strings.HasPrefix(first, "sandbox-exec:") {
				return false
			}
			*res = sandboxExecResult(*res, policy, ro.Cwd, first)
			return true
		},
		runner.NetworkDenials(o.NetDenials, o.NetDenialCount),
		bypassedProxy(sb),
		explainer(policy, sb, ParseDenials(o.Stderr), true),
		runner.PolicyDenials(policy, sb),
		explainer(policy, sb, o.LogDenials, eperm().MatchString(o.Stderr)),
	)
}

// proxyOnly says how a sandbox with an allow list reaches the network on
// macOS, for a program that did not.
func proxyOnly(sb *spec.Sandbox) string {
	return fmt.Sprintf("with the allow list [%s], programs connect only through cordon's proxy, which HTTPS_PROXY, HTTP_PROXY and ALL_PROXY name, and names are resolved by the proxy, not in the sandbox; "+
		"this program did not use it (ssh, raw sockets, a DNS lookup, a client that ignores the proxy variables, or a Unix socket); use a client that honours them (git and curl over https do)", strings.Join(sb.Network.Allow, ", "))
}

// bypassedProxy explains a failed name lookup or connection in a sandbox
// with an allow list: the profile allows the proxy's port only, so a
// program that went around the proxy met that.
func bypassedProxy(sb *spec.Sandbox) runner.Explainer {
	return func(o runner.Outcome, res *runner.Result) bool {
		if sb == nil || !sb.Network.Enabled || len(sb.Network.Allow) == 0 || !runner.MentionsNetworkFailure(o.Stderr) {
			return false
		}
		*res = runner.Denied(*res, runner.Denial{Detail: "a name lookup or connection failed: " + proxyOnly(sb)})
		return true
	}
}

// explainer explains a failure by the first of ds that the policy
// explains, when use is true.
func explainer(policy runner.Policy, sb *spec.Sandbox, ds []Denial, use bool) runner.Explainer {
	return func(o runner.Outcome, res *runner.Result) bool {
		if !use {
			return false
		}
		d, ok := explainDenials(policy, sb, o.Cwd, ds)
		if ok {
			*res = runner.Denied(*res, d)
		}
		return ok
	}
}

// sandboxExecResult classifies a failure that sandbox-exec itself reported.
func sandboxExecResult(res runner.Result, policy runner.Policy, cwd, line string) runner.Result {
	m := sandboxExecFailure().FindStringSubmatch(line)
	if m == nil {
		return runner.SetupFailure(res, fmt.Errorf("sandbox-exec refused the profile or the run: %s", strings.TrimPrefix(line, "sandbox-exec: ")))
	}
	cmd, reason := m[1], strings.ToLower(m[2])
	res.FailureType = runner.FailureProcessError
	switch {
	case strings.Contains(reason, "no such file"):
		res.ExitCode = runner.ExitNotFound
		res.FailureDetail = fmt.Sprintf("command not found in the sandbox: %s (PATH comes from env.pass or env.set; default %s)", cmd, DefaultPath)
	case strings.Contains(reason, "operation not permitted") && strings.Contains(cmd, "/"):
		res.ExitCode = runner.ExitNotRunnable
		if d, ok := explainDenials(policy, nil, cwd, []Denial{{Path: cmd}}); ok {
			return runner.Denied(res, d)
		}
		res.FailureDetail = fmt.Sprintf("cannot run %s: %s", cmd, m[2])
	default:
		res.ExitCode = runner.ExitNotRunnable
		res.FailureDetail = fmt.Sprintf("cannot run %s: %s", cmd, m[2])
	}
	return res
}

// explainDenials returns the first denial the policy explains: a path the
// sandbox may not access in the way the operation needs, or a network
// operation in a sandbox without network.
func explainDenials(policy runner.Policy, sb *spec.Sandbox, cwd string, ds []Denial) (runner.Denial, bool) {
	for _, d := range ds {
		if strings.HasPrefix(d.Operation, "network") && sb != nil && sb.Network.Enabled && len(sb.Network.Allow) > 0 {
			return runner.Denial{Path: d.Path, Detail: "a connection was refused: " + proxyOnly(sb)}, true
		}
		if strings.HasPrefix(d.Operation, "network") && (sb == nil || !sb.Network.Enabled) {
			what := "a connection"
			if d.Path != "" {
				what = "a connection to the Unix socket " + d.Path
			}
			return runner.Denial{Path: d.Path, Detail: fmt.Sprintf("%s was refused: network access is disabled for this sandbox (network: false), Unix sockets included; commands that need the network must run with a sandbox that allows it", what)}, true
		}
		if d.Path == "" || policy == nil {
			continue
		}
		p := d.Path
		if !filepath.IsAbs(p) {
			if cwd == "" {
				continue
			}
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		var err error
		switch {
		case strings.HasPrefix(d.Operation, "file-write"):
			err = policy.Check(p, true)
		case strings.HasPrefix(d.Operation, "file-read") || d.Operation == "process-exec":
			err = policy.Check(p, false)
		case d.Operation == "":
			// A stderr message does not say whether it read or wrote: an
			// unreadable path gets the read message, a read-only one the
			// write message.
			if err = policy.Check(p, false); err == nil {
				err = policy.Check(p, true)
			}
		}
		if err != nil {
			return runner.Denial{Path: p, Detail: err.Error()}, true
		}
	}
	return runner.Denial{}, false
}
