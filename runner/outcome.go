package runner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-run/cordon/spec"
)

// Outcome is what a backend observed of one run: the facts classification
// needs, and nothing the command could forge except what it printed
// (Stderr), which only ever explains a failure through the policy.
type Outcome struct {
	// SetupErr is a failure to set the sandbox up or start it.
	SetupErr error
	// ExitCode is the command's exit status; 128+n after signal n.
	ExitCode int
	// Signal names the signal that ended the command ("SIGKILL"), or "".
	Signal string
	// TimedOut, Canceled, Interrupted: how supervision ended (see Ended).
	TimedOut, Canceled, Interrupted bool
	// Timeout is the run's effective timeout, for the message.
	Timeout time.Duration
	// OOM: the memory limit, MemoryLimit bytes, killed a process.
	OOM         bool
	MemoryLimit int64
	// PidsLimited: the cgroup's pids controller refused a fork (its
	// pids.events "max" counter rose) while the command ran; PidsLimit is
	// limits.pids.
	PidsLimited bool
	PidsLimit   int64
	// FileSizeLimit is limits.file_size (RLIMIT_FSIZE) in bytes, 0 for none.
	FileSizeLimit int64
	// Stderr is the tail of the command's stderr.
	Stderr string
	// Cwd is the command's working directory, against which relative
	// paths in Stderr are resolved.
	Cwd string
	// Init is what cordon's PID 1 reported on its status pipe, or nil when
	// the backend runs no such init.
	Init *InitStatus
}

// Explainer is one backend-specific reading of a failed command. It fills
// res's failure fields and returns true when it explains the failure;
// Classify asks the explainers in order and stops at the first that does.
type Explainer func(o Outcome, res *Result) bool

// Classify turns an outcome into the typed result: a set-up failure, a
// timeout, a cancellation, an OOM kill and success are read from the facts;
// a failed command is asked of the explainers in order, and is a process
// error when none explains it. res carries what every outcome shares (the
// backend, the sandbox summary, what was not enforced); its exit code,
// signal and failure fields are set here.
func Classify(res Result, o Outcome, explain ...Explainer) Result {
	res.ExitCode, res.Signal = o.ExitCode, o.Signal
	switch {
	case o.SetupErr != nil:
		return SetupFailure(res, o.SetupErr)
	case o.TimedOut:
		res.ExitCode = ExitTimeout
		res.FailureType = FailureTimeout
		res.FailureDetail = fmt.Sprintf("the command ran longer than the timeout of %s; it and all its processes were killed", o.Timeout)
		return res
	case o.Interrupted:
		res.FailureType = FailureProcessError
		res.FailureDetail = "the run was interrupted twice (^C, SIGINT or SIGTERM); the command and all its processes were killed"
		return res
	case o.Canceled:
		res.FailureType = FailureProcessError
		res.FailureDetail = "the run was canceled; the command and all its processes were killed"
		return res
	case o.OOM:
		res.FailureType = FailureOOM
		res.FailureDetail = fmt.Sprintf("the command exceeded the memory limit of %s and was killed", spec.FormatBytes(o.MemoryLimit))
		return res
	case o.ExitCode == 0:
		res.FailureType = FailureNone
		return res
	case initFailed(o):
		// cordon's own PID 1 failed: initMessages says how.
	case o.PidsLimited:
		res.FailureType = FailurePidsLimit
		res.FailureDetail = fmt.Sprintf("the command hit the process limit of %d (limits.pids): the kernel refused a fork; "+
			"raise limits.pids (--pids) or start fewer processes", o.PidsLimit)
		return res
	case fileSizeKilled(o):
		res.FailureType = FailureFileSizeLimit
		res.FailureDetail = fmt.Sprintf("a file grew past the file size limit of %s (limits.file_size) and the command was killed by SIGXFSZ; "+
			"raise limits.file_size or write less", spec.FormatBytes(o.FileSizeLimit))
		return res
	}
	for _, e := range explain {
		if e(o, &res) {
			return res
		}
	}
	res.FailureType = FailureProcessError
	res.FailureDetail = fmt.Sprintf("the command exited with status %d", o.ExitCode)
	if o.Signal != "" {
		res.FailureDetail = "the command was killed by " + o.Signal
	} else if o.FileSizeLimit > 0 && o.ExitCode == 128+sigXFSZ {
		// The status is the command's own to choose, so it decides no type;
		// it only earns a hint.
		res.FailureDetail += fmt.Sprintf(", as a shell reports a child killed by SIGXFSZ: if a file reached limits.file_size (%s), "+
			"that was it", spec.FormatBytes(o.FileSizeLimit))
	} else if o.FileSizeLimit > 0 && mentionsEFBIG(o.Stderr) {
		// A program that ignores SIGXFSZ (Python does) sees EFBIG
		// instead; its text is the command's own too: a hint, no type.
		res.FailureDetail += fmt.Sprintf(", and its stderr says \"File too large\" (EFBIG): if a file reached limits.file_size (%s), "+
			"that was it; raise limits.file_size or write less", spec.FormatBytes(o.FileSizeLimit))
	}
	return res
}

// initFailed reports whether cordon's PID 1 reported a failure of its own
// (see initMessages), which no limit of the command's explains.
func initFailed(o Outcome) bool {
	st := o.Init
	return st != nil && (st.Setup != "" || !st.Started || (st.ExecCode != 0 && st.ExecCode == o.ExitCode))
}

// mentionsEFBIG reports whether stderr has EFBIG's wording, as libc,
// Python ("[Errno 27] File too large") and Node ("EFBIG") print it.
func mentionsEFBIG(stderr string) bool {
	l := strings.ToLower(stderr)
	return strings.Contains(l, "file too large") || strings.Contains(l, "efbig")
}

// sigXFSZ is SIGXFSZ's number, the same on Linux and macOS.
const sigXFSZ = 25

// fileSizeKilled reports whether the file size limit ended the command:
// SIGXFSZ in the wait status cordon's PID 1 reaped. A shell's exit status
// 128+SIGXFSZ is not enough: any command can exit with it (a forged
// file_size_limit would invite raising the limit). Without a limit the
// kernel sends no SIGXFSZ.
func fileSizeKilled(o Outcome) bool {
	return o.FileSizeLimit > 0 && o.Signal == "SIGXFSZ"
}

// SetupFailure is res for a sandbox that could not be set up (exit 125).
// err is wrapped in ErrSetup unless it matches ErrSetup or ErrUnenforceable
// already.
func SetupFailure(res Result, err error) Result {
	if !errors.Is(err, ErrSetup) && !errors.Is(err, ErrUnenforceable) {
		err = fmt.Errorf("%w: %w", ErrSetup, err)
	}
	res.ExitCode = ExitSetupError
	res.FailureType = FailureSetupError
	res.FailureDetail = err.Error()
	return res
}

// Denied is res for a failure the sandbox policy explains.
func Denied(res Result, d Denial) Result {
	res.FailureType = FailureSandboxDenied
	res.BlockedPath = d.Path
	res.FailureDetail = d.Detail
	return res
}

// PolicyDenials is the explainer every backend shares: a failure whose
// stderr names a path (or a network failure) that the policy p of sandbox
// sb explains, as ClassifyDenial decides.
func PolicyDenials(p Policy, sb *spec.Sandbox) Explainer {
	return func(o Outcome, res *Result) bool {
		d, ok := ClassifyDenial(p, sb, o.Cwd, o.Stderr)
		if ok {
			*res = Denied(*res, d)
		}
		return ok
	}
}

// InitStatus is what cordon's own PID 1 reported about itself on its status
// pipe: a channel whose write end is close-on-exec in a non-dumpable
// process, so the command can never write it. It is the only source of a
// failure of the init: a "cordon: ..." line on the command's stderr is the
// command's own text and explains nothing.
type InitStatus struct {
	// Started: the command's process was created (the init forked it).
	Started bool
	// Setup is the init's message when it could not finish setting the
	// sandbox up.
	Setup string
	// ExecCode (126 or 127) and ExecMsg: the command could not be executed.
	ExecCode int
	ExecMsg  string
	// Exited: the command ended, with wait status WaitStatus (which tells
	// a signal from an exit status of 128+n).
	Exited     bool
	WaitStatus uint32
}

// ParseInitStatus reads the records of the status pipe ("started -",
// "setup MESSAGE", "exec CODE MESSAGE", "exited WSTATUS", one a line). Lines it does not know
// are ignored.
func ParseInitStatus(data string) InitStatus {
	var st InitStatus
	for _, line := range strings.Split(data, "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "started":
			st.Started = true
		case "setup":
			if st.Setup == "" {
				st.Setup = rest
			}
		case "exited":
			if n, err := strconv.ParseUint(rest, 10, 32); err == nil {
				st.Exited, st.WaitStatus = true, uint32(n)
			}
		case "exec":
			code, msg, _ := strings.Cut(rest, " ")
			if n, err := strconv.Atoi(code); err == nil && (n == ExitNotFound || n == ExitNotRunnable) {
				st.ExecCode, st.ExecMsg = n, msg
			}
		}
	}
	return st
}

// InitMessages explains the failures cordon's own PID 1 reported on its
// status pipe (Outcome.Init): it could not finish setting the sandbox up
// (125), it exited before it started the command, or the command cannot be
// executed (126/127). Without that pipe (Init nil) it explains nothing: the
// command's stderr and exit status are the command's to choose.
func InitMessages(o Outcome, res *Result) bool {
	st := o.Init
	if st == nil {
		return false
	}
	switch {
	case st.Setup != "":
		*res = SetupFailure(*res, fmt.Errorf("%w: sandbox init: %s", ErrSetup, st.Setup))
		return true
	case !st.Started:
		*res = SetupFailure(*res, fmt.Errorf("%w: the sandbox init exited with status %d before it started the command", ErrSetup, o.ExitCode))
		return true
	case st.ExecCode != 0 && st.ExecCode == o.ExitCode:
		res.FailureType = FailureProcessError
		res.FailureDetail = st.ExecMsg
		return true
	}
	return false
}
