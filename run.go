package cordon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/overlay"
	"github.com/cordon-run/cordon/runner"
)

// Sentinels of a run or an exec that the audit log stopped or could not
// finish. Both also match ErrAuditWrite.
var (
	// ErrNotStarted: the run's start could not be recorded, so the command
	// was not started.
	ErrNotStarted = errors.New("the command was not started")
	// ErrNotRecorded: the command ran, but its result could not be
	// recorded; the result returned with it is the real one.
	ErrNotRecorded = errors.New("its result could not be recorded")
)

// runConfig collects RunOptions.
type runConfig struct {
	req runner.Request
	// overlay is the overlay the run writes to (InOverlay).
	overlay string
	ov      *overlay.Overlay
	// Session execs only (session.go).
	env     []string
	detach  bool
	signals <-chan int
	memory  int64
}

// RunOption adjusts a run.
type RunOption func(*runConfig)

// Stdout streams the command's standard output to w as it comes.
func Stdout(w io.Writer) RunOption { return func(c *runConfig) { c.req.Stdout = w } }

// Stderr streams the command's standard error to w as it comes.
func Stderr(w io.Writer) RunOption { return func(c *runConfig) { c.req.Stderr = w } }

// Stdin feeds r to the command's standard input (default: empty).
func Stdin(r io.Reader) RunOption { return func(c *runConfig) { c.req.Stdin = r } }

// Dir sets the working directory inside the sandbox (default: the
// workspace).
func Dir(dir string) RunOption { return func(c *runConfig) { c.req.Dir = dir } }

// Timeout kills the whole sandbox after d; the sandbox's own timeout still
// applies when it is shorter.
func Timeout(d time.Duration) RunOption { return func(c *runConfig) { c.req.Timeout = d } }

// Terminal gives the command a pseudo-terminal of its own; Stdin and
// Stdout then carry the terminal's traffic. size reports the caller's
// terminal size, read at start and on every SIGWINCH forwarded to the
// command.
func Terminal(size func() (cols, rows uint16, ok bool)) RunOption {
	return func(c *runConfig) { c.req.TTY, c.req.TermSize = true, size }
}

// TypeAhead gives a Terminal run or exec the input the caller's terminal
// already held when it was made raw (runner.MakeRaw): it reaches the
// command's terminal before Stdin.
func TypeAhead(b []byte) RunOption { return func(c *runConfig) { c.req.TypeAhead = b } }

// Notify forwards the signals received on ch to Run's command. SIGWINCH
// resizes its terminal instead; a second SIGINT or SIGTERM kills the whole
// sandbox. A session's exec takes Signals instead.
func Notify(ch <-chan os.Signal) RunOption { return func(c *runConfig) { c.req.Signals = ch } }

// InOverlay runs the command in the copy-on-write overlay name of the
// workspace: the workspace is the read-only lower layer and every write
// lands in the overlay's upper layer, which cordon keeps per user outside
// the workspace (OverlayStore). A later run with the same name continues
// where this one stopped; nothing reaches the host until ApplyOverlay.
func InOverlay(name string) RunOption { return func(c *runConfig) { c.overlay = name } }

// Run runs args in the sandbox and returns its typed result: the exit code
// and the failure type (none, process_error, sandbox_denied with what IS
// allowed, timeout, oom, setup_error). The error is non-nil only when the
// run could not be attempted or recorded: the backend is missing, the
// request is invalid, or the audit log cannot be written (then the error
// matches ErrNotStarted and the command is not started; or ErrNotRecorded,
// with the command's real result).
func (s *Sandbox) Run(ctx context.Context, args []string, opts ...RunOption) (Result, error) {
	var c runConfig
	for _, o := range opts {
		o(&c)
	}
	c.req.Sandbox, c.req.Args, c.req.Links = s.sb, args, s.recentLinks()
	r, err := s.p.backend()
	if err != nil {
		return setupResult(err), err
	}
	if c.overlay == "" {
		c.overlay = s.sb.OverlayName
	}
	if c.overlay != "" {
		sb, o, release, err := startOverlay(s.sb, c.overlay)
		if err != nil {
			return overlayStartResult(c.overlay, err), fmt.Errorf("%w: %w", ErrNotStarted, err)
		}
		defer release()
		c.req.Sandbox = sb
		c.ov = o
	}
	run, err := s.p.log.Start(s.sb, args, s.table)
	if err != nil {
		return setupResult(err), fmt.Errorf("%w: %w", ErrNotStarted, err)
	}
	res, err := r.Run(ctx, c.req)
	if c.ov != nil {
		res.Overlay = c.ov.Name
		res.OverlayChanged, res.OverlayChanges = overlayPaths(c.ov)
	}
	if err != nil {
		if aerr := run.Finish(auditOutcome(setupResult(err))); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return setupResult(err), err
	}
	if err := run.Finish(auditOutcome(res)); err != nil {
		return res, notRecorded(res, err)
	}
	return res, nil
}

// notRecorded is the error of a command that ran but whose result the
// audit log could not take.
func notRecorded(res Result, err error) error {
	return fmt.Errorf("the command ran (exit %d) but %w: %w", res.ExitCode, ErrNotRecorded, err)
}

// auditOutcome is what the audit log records of res.
func auditOutcome(res Result) audit.Outcome {
	return audit.Outcome{ExitCode: res.ExitCode, FailureType: string(res.FailureType), FailureDetail: res.FailureDetail,
		BlockedPath: res.BlockedPath, Signal: res.Signal, DurationMS: res.DurationMS,
		SandboxDenied: res.FailureType == runner.FailureSandboxDenied, Network: res.Network}
}
