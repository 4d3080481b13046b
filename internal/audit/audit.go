package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/internal/netguard/netevent"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// Events of a Record.
const (
	// EventStart is written before a command starts.
	EventStart = "start"
	// EventRun is written when a command has ended.
	EventRun = "run"
	// EventDenial is written for every refusal.
	EventDenial = "denial"
	// EventServe is written when `cordon mcp` starts serving a sandbox.
	EventServe = "serve"
	// EventNet is written for every decision of the network guard of a
	// run with an allow list: a DNS question, a TCP connection (with its
	// bytes) or a refused datagram.
	EventNet = "net"
)

// Front ends named by Record.Via.
const (
	ViaCLI = "cli"
	ViaMCP = "mcp"
	ViaAPI = "api"
)

// Sources of a denial, named by Record.Source.
const (
	// SourceQuery is a refusal of the query API: a file tool or a check.
	SourceQuery = "query"
	// SourceDerive is a worker derivation that would widen its parent.
	SourceDerive = "derive"
	// SourceAttach is a refused attachment.
	SourceAttach = "attach"
	// SourceRunner is a failed command that the sandbox policy explains.
	SourceRunner = "runner"
)

// Record is one line of the audit log.
type Record struct {
	// Time is when the record was made (UTC).
	Time time.Time `json:"time"`
	// Event is start, run or denial.
	Event string `json:"event"`
	// Via is the front end: cli, mcp or api.
	Via string `json:"via,omitempty"`
	// PID is the cordon process that wrote the record.
	PID int `json:"pid"`
	// RunID ties a run's start and run records (and its runner denial).
	RunID string `json:"run_id,omitempty"`
	// Command is the command of a run.
	Command []string `json:"command,omitempty"`
	// Sandbox is the digest of the effective sandbox: "sha256:" and the hex
	// SHA-256 of its canonical JSON (spec.SandboxDigest).
	Sandbox string `json:"sandbox,omitempty"`
	// Lineage is the worker chain of the sandbox, outermost first.
	Lineage []string `json:"lineage"`
	// Result is the outcome of a run (run records only).
	Result *Result `json:"result,omitempty"`
	// DurationMS is the run's wall time (run records only).
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// Source is where a denial came from: query, derive, attach or runner.
	Source string `json:"source,omitempty"`
	// Op is the refused operation of a query denial: read, write or list.
	Op string `json:"op,omitempty"`
	// Path is the refused path, if the denial concerns one.
	Path string `json:"path,omitempty"`
	// Worker is the worker whose derivation was refused.
	Worker string `json:"worker,omitempty"`
	// Rule is the rule that refused: deny, protect, readonly, outside,
	// suffixes, max_file_bytes, network, max-depth, zone-mode, ...
	Rule string `json:"rule,omitempty"`
	// Detail is the message given to the caller.
	Detail string `json:"detail,omitempty"`
	// Network is the guard's decision of a net record: proto, host and
	// where the name came from, address, port, rule, allow or deny, the
	// reason, bytes.
	Network *netevent.Event `json:"network,omitempty"`
}

// Result is the outcome of a run as the log records it.
type Result struct {
	ExitCode      int    `json:"exit_code"`
	FailureType   string `json:"failure_type"`
	FailureDetail string `json:"failure_detail,omitempty"`
	BlockedPath   string `json:"blocked_path,omitempty"`
	Signal        string `json:"signal,omitempty"`
}

// Log appends records to one or more files. A nil *Log, or one made from no
// paths, writes nothing and never fails. A Log is safe for concurrent use.
type Log struct {
	paths []string
	via   string
	// warn, when set, makes the log best effort: a failed write is passed
	// to warn instead of failing the run (the config's
	// `audit_required: false`).
	warn func(error)
}

// BestEffort makes l report failed writes to warn instead of returning
// them, so they no longer fail the run closed. It returns l.
func (l *Log) BestEffort(warn func(error)) *Log {
	if l != nil {
		l.warn = warn
	}
	return l
}

// New returns a log that appends every record to each of paths, with Via
// set to via. Empty paths are skipped and duplicates written once. A file
// is created (mode 0600) when missing; its folder must exist. Nothing is
// opened until the first record.
func New(via string, paths ...string) *Log {
	l := &Log{via: via}
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !seen[p] {
			seen[p] = true
			l.paths = append(l.paths, p)
		}
	}
	return l
}

// Enabled reports whether the log writes anywhere.
func (l *Log) Enabled() bool { return l != nil && len(l.paths) > 0 }

// Paths returns the files the log appends to.
func (l *Log) Paths() []string {
	if l == nil {
		return nil
	}
	return append([]string(nil), l.paths...)
}

// Append writes recs, filling in Time, PID and Via where unset. All of them
// go to each file in one write(2) under an exclusive flock(2), so they are
// never interleaved with another writer's. The error joins one *WriteError
// per file that failed, and matches ErrWrite.
func (l *Log) Append(recs ...Record) error {
	if !l.Enabled() || len(recs) == 0 {
		return nil
	}
	var buf []byte
	now := time.Now().UTC()
	for _, r := range recs {
		if r.Time.IsZero() {
			r.Time = now
		}
		if r.PID == 0 {
			r.PID = os.Getpid()
		}
		if r.Via == "" {
			r.Via = l.via
		}
		if r.Lineage == nil {
			r.Lineage = []string{}
		}
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false) // keep "<", ">" and "&" of commands readable
		if err := enc.Encode(r); err != nil {
			return &WriteError{Path: strings.Join(l.paths, ", "), Err: err}
		}
		buf = append(buf, line.Bytes()...)
	}
	var errs []error
	for _, p := range l.paths {
		if err := appendLocked(p, buf); err != nil {
			errs = append(errs, &WriteError{Path: p, Err: err})
		}
	}
	err := errors.Join(errs...)
	if err != nil && l.warn != nil {
		l.warn(err)
		return nil
	}
	return err
}

// Serve records that a server starts offering sb's tools. It is written
// before the first request is served, so that a log that cannot be written
// stops the server before it does anything.
func (l *Log) Serve(sb *spec.Sandbox) error {
	r, err := l.sandboxRecord(EventServe, sb)
	if err != nil {
		return err
	}
	return l.Append(r)
}

// sandboxRecord is a record of event that names sb (its digest and
// lineage), when there is one.
func (l *Log) sandboxRecord(event string, sb *spec.Sandbox) (Record, error) {
	r := Record{Event: event}
	if sb != nil {
		r.Lineage = append([]string{}, sb.Lineage...)
		d, err := spec.SandboxDigest(sb)
		if err != nil {
			return r, &WriteError{Path: strings.Join(l.Paths(), ", "), Err: err}
		}
		r.Sandbox = d
	}
	return r, nil
}

// Policy is the query API's check of a path (the sandbox's *mounts.Table):
// Finish asks it for the rule behind a blocked path.
type Policy interface {
	Check(path string, write bool) error
}

// Outcome is what Finish records of a run's result. The audit log takes it
// as a value of its own, not the runner's Result, so that it stays a leaf
// below the runner contract; the root package fills it from a Result.
type Outcome struct {
	ExitCode      int
	FailureType   string
	FailureDetail string
	BlockedPath   string
	Signal        string
	DurationMS    int64
	// SandboxDenied is true when the failure is a sandbox denial: Finish
	// then records a runner denial naming the blocked path and its rule.
	SandboxDenied bool
	// Network is the network guard's decisions, one record each.
	Network []netevent.Event
}

// Run is one run being recorded: Log.Start wrote its start record; Finish
// writes its end.
type Run struct {
	log     *Log
	id      string
	command []string
	digest  string
	lineage []string
	policy  Policy
	sb      *spec.Sandbox
	start   time.Time
}

// Start records that args is about to run in sb, and returns the Run to
// finish. When the record cannot be written it returns an error matching
// ErrWrite, and the caller must not start the command: cordon fails closed.
// policy (the sandbox's *mounts.Table, or nil) names the rule of a runner
// denial in Finish.
func (l *Log) Start(sb *spec.Sandbox, args []string, policy Policy) (*Run, error) {
	r := &Run{log: l, id: newID(), command: append([]string(nil), args...), policy: policy, sb: sb, start: time.Now()}
	// The digest only names the sandbox in records: a log that writes
	// nowhere needs none (a warm session's exec would hash the whole
	// sandbox each time, about a tenth of its cost in cordon).
	if sb != nil && l.Enabled() {
		r.lineage = append([]string{}, sb.Lineage...)
		d, err := spec.SandboxDigest(sb)
		if err != nil {
			return nil, &WriteError{Path: strings.Join(l.Paths(), ", "), Err: err}
		}
		r.digest = d
	}
	if err := l.Append(Record{Event: EventStart, RunID: r.id, Command: r.command, Sandbox: r.digest, Lineage: r.lineage}); err != nil {
		return nil, err
	}
	return r, nil
}

// Finish records the run's result and duration and, when the sandbox
// explains its failure, a runner denial with the blocked path and the rule.
// A nil *Run does nothing.
func (r *Run) Finish(res Outcome) error {
	if r == nil {
		return nil
	}
	ms := res.DurationMS
	if ms == 0 {
		ms = time.Since(r.start).Milliseconds()
	}
	recs := []Record{{Event: EventRun, RunID: r.id, Command: r.command, Sandbox: r.digest, Lineage: r.lineage,
		DurationMS: &ms, Result: &Result{ExitCode: res.ExitCode, FailureType: res.FailureType,
			FailureDetail: res.FailureDetail, BlockedPath: res.BlockedPath, Signal: res.Signal}}}
	if res.SandboxDenied {
		recs = append(recs, Record{Event: EventDenial, Source: SourceRunner, RunID: r.id, Command: r.command,
			Sandbox: r.digest, Lineage: r.lineage, Path: res.BlockedPath, Rule: runnerRule(r.policy, r.sb, res),
			Detail: res.FailureDetail})
	}
	for i := range res.Network {
		e := res.Network[i]
		recs = append(recs, Record{Event: EventNet, RunID: r.id, Sandbox: r.digest, Lineage: r.lineage,
			Rule: e.Rule, Detail: e.Detail, Network: &e})
	}
	return r.log.Append(recs...)
}

// ID returns the run's id, as written in its records.
func (r *Run) ID() string {
	if r == nil {
		return ""
	}
	return r.id
}

// runnerRule names the rule behind a runner denial: the query API's rule for
// the blocked path, or "network".
func runnerRule(p Policy, sb *spec.Sandbox, res Outcome) string {
	if res.BlockedPath == "" {
		if sb != nil && !sb.Network.Enabled {
			return "network"
		}
		return ""
	}
	if p == nil {
		return ""
	}
	err := p.Check(res.BlockedPath, false)
	if err == nil {
		err = p.Check(res.BlockedPath, true)
	}
	return pathRule(err)
}

// Denied records one denial per refusal found in err: each
// *spec.WideningError (source derive), *attach.Error (source attach) and
// policy *mounts.PathError (source query) in its errors.Join tree. sb is the
// sandbox the refusal concerns (for its digest and lineage; nil when there
// is none yet). It returns nil, and writes nothing, when err holds no
// refusal.
func (l *Log) Denied(sb *spec.Sandbox, err error) error {
	recs := Denials(sb, err)
	if len(recs) == 0 {
		return nil
	}
	return l.Append(recs...)
}

// Denials returns the denial records for the refusals in err, as Denied
// writes them.
func Denials(sb *spec.Sandbox, err error) []Record {
	var base Record
	base.Event = EventDenial
	if sb != nil {
		base.Lineage = append([]string{}, sb.Lineage...)
		if d, derr := spec.SandboxDigest(sb); derr == nil {
			base.Sandbox = d
		}
	}
	var out []Record
	walk(err, func(e error) bool {
		r := base
		switch e := e.(type) {
		case *spec.WideningError:
			r.Source, r.Worker, r.Rule, r.Detail = SourceDerive, e.Worker, e.Rule, e.Error()
		case *attach.Error:
			r.Source, r.Path, r.Rule, r.Detail = SourceAttach, e.Path, e.Rule, e.Error()
		case *mounts.PathError:
			if !IsPolicyRefusal(e) {
				return false
			}
			r.Source, r.Op, r.Path, r.Rule, r.Detail = SourceQuery, e.Op, e.Path, pathRule(e), e.Error()
		default:
			return false
		}
		out = append(out, r)
		return true
	})
	return out
}

// walk calls fn on each error of err's tree, depth first, and does not
// descend below an error fn accepted.
func walk(err error, fn func(error) bool) {
	if err == nil || fn(err) {
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	}
}

// IsPolicyRefusal reports whether err is the sandbox refusing a path (as
// opposed to a missing file or an I/O error): outside the sandbox, denied,
// read-only, a suffix or size rule, a symbolic-link loop, an invalid path or
// a path that changed between check and use.
func IsPolicyRefusal(err error) bool {
	for _, s := range []error{mounts.ErrOutsideSandbox, mounts.ErrDenied, mounts.ErrReadOnly, mounts.ErrSuffix,
		mounts.ErrTooLarge, mounts.ErrLoop, mounts.ErrInvalidPath, mounts.ErrChanged} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// pathRule names the rule of a query API error.
func pathRule(err error) string {
	var pe *mounts.PathError
	if !errors.As(err, &pe) {
		return ""
	}
	switch {
	case errors.Is(pe, mounts.ErrOutsideSandbox):
		return "outside"
	case errors.Is(pe, mounts.ErrLoop):
		return "symlink-loop"
	case errors.Is(pe, mounts.ErrChanged):
		return "changed"
	case errors.Is(pe, mounts.ErrInvalidPath):
		return "invalid-path"
	case pe.Rule != "":
		return pe.Rule
	}
	return fmt.Sprint(pe.Err)
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}
