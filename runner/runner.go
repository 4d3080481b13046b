// Package runner defines the backend-neutral Runner interface, its Request and
// Result types, and the policy-aware classification of failures that every
// backend shares. The libcontainer backend lives in this package's _linux.go
// files; the Seatbelt backend lives in package darwin.
package runner

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/cordon-run/cordon/internal/netguard/netevent"
	"github.com/cordon-run/cordon/spec"
)

// Runner runs one command inside a sandbox.
//
// Run returns a non-nil error only when the run could not be attempted or
// its outcome could not be learned; every outcome of the command itself,
// including a timeout, an OOM kill, a sandbox denial and a set-up failure,
// is described by the Result, whose FailureType says which it was.
type Runner interface {
	Run(ctx context.Context, req Request) (Result, error)
}

// Request is one command to run in a sandbox.
type Request struct {
	// Sandbox is the effective (already derived) sandbox.
	Sandbox *spec.Sandbox
	// Args is the command and its arguments; Args[0] is looked up in PATH
	// inside the sandbox when it has no slash.
	Args []string
	// Dir is the working directory inside the sandbox (default: the root).
	Dir string
	// Stdin, Stdout and Stderr are the command's stdio; nil means
	// /dev/null for Stdin and discard for the others. Stdin is copied by a
	// goroutine that cannot be interrupted while it waits in Read: after
	// the run ends it consumes at most one more read's worth of input, so a
	// caller that reuses a reader across runs should pass a fresh one.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// TTY allocates a pseudo-terminal for the command; Stdin and Stdout
	// then carry the terminal's traffic.
	TTY bool
	// ID names the run for logs and state; "" picks a unique one.
	ID string
	// Timeout, when above zero, is a timeout for this run; the sandbox's own
	// timeout still applies when it is shorter.
	Timeout time.Duration
	// Signals, when not nil, carries signals to forward to the command.
	// SIGWINCH resizes the terminal of a TTY run instead. A second SIGINT or
	// SIGTERM kills the whole sandbox, as a command running as PID 1 of its
	// namespace ignores signals it installed no handler for.
	Signals <-chan os.Signal
	// TermSize, for a TTY run, reports the host terminal's size; it is
	// read at start and on every SIGWINCH that Signals delivers.
	TermSize func() (cols, rows uint16, ok bool)
	// TypeAhead, for a TTY run, is written to the command's terminal
	// before Stdin: the input the caller's terminal held when it was made
	// raw (MakeRaw).
	TypeAhead []byte
	// Links, when they hold for Sandbox (spec.Links.For), are the entries
	// on what symlinks reach that the caller's walk found just before
	// (its mount table's): the plan takes them rather than walking the
	// workspace again. nil, or links of another sandbox, walks.
	Links *spec.Links
}

// EffectiveTimeout is the shorter of the request's and the sandbox's
// timeouts, or 0 when neither is set.
func (r Request) EffectiveTimeout() time.Duration {
	t := time.Duration(0)
	if r.Sandbox != nil {
		t = r.Sandbox.Limits.Timeout
	}
	if r.Timeout > 0 && (t == 0 || r.Timeout < t) {
		t = r.Timeout
	}
	return t
}

// FailureType classifies how a run ended.
type FailureType string

const (
	// FailureNone means the command ran and exited 0.
	FailureNone FailureType = "none"
	// FailureSandboxDenied means the sandbox policy explains the failure.
	FailureSandboxDenied FailureType = "sandbox_denied"
	// FailureTimeout means the timeout killed the sandbox.
	FailureTimeout FailureType = "timeout"
	// FailureOOM means the memory limit killed the command.
	FailureOOM FailureType = "oom"
	// FailureProcessError means the command failed on its own account.
	FailureProcessError FailureType = "process_error"
	// FailureSetupError means cordon could not set the sandbox up.
	FailureSetupError FailureType = "setup_error"
	// FailurePidsLimit means the process limit (limits.pids) refused a
	// fork, as the cgroup's own counter shows, and the command failed.
	FailurePidsLimit FailureType = "pids_limit"
	// FailureFileSizeLimit means the file size limit (limits.file_size)
	// killed the command with SIGXFSZ.
	FailureFileSizeLimit FailureType = "file_size_limit"
	// FailureConfigError means cordon refused the invocation before
	// anything ran: a bad flag, config or worker file, a refused
	// derivation (exit 2). Front ends that write a report write it too.
	FailureConfigError FailureType = "config_error"
)

// FailureTypes lists every failure type a Result can carry, for front
// ends and documentation (the README's table is checked against it).
func FailureTypes() []FailureType {
	return []FailureType{FailureNone, FailureSandboxDenied, FailureTimeout, FailureOOM, FailurePidsLimit, FailureFileSizeLimit,
		FailureNetworkDenied, FailureProcessError, FailureSetupError, FailureConfigError, FailureSessionGone, FailureOverlayInUse}
}

// Exit codes with a fixed meaning, as in timeout(1) and env(1).
const (
	ExitTimeout     = 124
	ExitSetupError  = 125
	ExitNotRunnable = 126
	ExitNotFound    = 127
)

// Result is the outcome of one run. It is also the JSON report.
type Result struct {
	ExitCode      int         `json:"exit_code"`
	FailureType   FailureType `json:"failure_type"`
	FailureDetail string      `json:"failure_detail,omitempty"`
	BlockedPath   string      `json:"blocked_path,omitempty"`
	DurationMS    int64       `json:"duration_ms"`
	// Signal is the signal that ended the command, if one did.
	Signal string `json:"signal,omitempty"`
	// OutputTruncated says limits.output cut stdout or stderr; the cut
	// stream carries a marker where it was cut.
	OutputTruncated bool `json:"output_truncated,omitempty"`
	// Unenforced lists parts of the boundary the backend could not enforce
	// (only possible when the sandbox allows degradation).
	Unenforced []string `json:"unenforced,omitempty"`
	// Backend names the backend that ran the command.
	Backend string `json:"backend,omitempty"`
	// Sandbox is a summary of the effective sandbox.
	Sandbox *spec.Summary `json:"sandbox,omitempty"`
	// Denials lists the calls the sandbox refused while the command ran
	// (the first MaxListedDenials distinct ones), from cordon's own record,
	// whatever the command printed and however it exited; DenialCount is
	// how many calls were refused in all.
	Denials     []DeniedCall `json:"denials,omitempty"`
	DenialCount int          `json:"denial_count,omitempty"`
	// Network lists the network guard's decisions (DNS questions, TCP
	// connections, refused datagrams) of a run with a network allow list,
	// in order; the audit log writes one line for each.
	Network []netevent.Event `json:"network,omitempty"`
	// Overlay names the overlay a run in overlay mode wrote to (nothing
	// reached the host workspace); OverlayChanged counts the workspace
	// files it changes so far, and OverlayChanges lists the first
	// MaxOverlayChanges of them in path order (cordon diff --stat NAME
	// lists them all).
	Overlay        string   `json:"overlay,omitempty"`
	OverlayChanged int      `json:"overlay_changed,omitempty"`
	OverlayChanges []string `json:"overlay_changes,omitempty"`
}

// MaxOverlayChanges is how many paths a Result's OverlayChanges lists: a
// run that untars 10,000 files gets their count and the first paths, not
// a list that floods a report or a model's context.
const MaxOverlayChanges = 1000

// Options configure a backend created by New.
type Options struct {
	// StateDir holds run state; "" picks /run/cordon for root and a private
	// per-user directory otherwise.
	StateDir string
	// Resolver resolves the names a network allow list admits; nil means
	// the host's resolver (/etc/hosts, then DNS).
	Resolver netevent.Resolver
}
