package spec

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is matched by every error about a config, a worker file or
// a profile name that cannot be used as written.
var ErrInvalidConfig = errors.New("invalid config")

// ErrWidening is matched by every error about a worker that asks for more
// than its parent sandbox allows.
var ErrWidening = errors.New("worker asks for more than its parent allows")

// FieldError is one problem with one field of a config or worker file. Load,
// Parse and ParseWorker return all of them at once, joined with errors.Join.
type FieldError struct {
	// Field is the dotted path of the field, "sandbox.mounts[1].target".
	Field string
	// Line is the 1-based YAML line, or 0 when there is none.
	Line int
	// Problem says what is wrong.
	Problem string
	// Fix says what to write instead.
	Fix string
}

// Error renders the problem as
// "sandbox.mounts[1].target (line 7): must be absolute; fix: ...".
func (e *FieldError) Error() string {
	var b strings.Builder
	field := e.Field
	if field == "" {
		field = "config"
	}
	b.WriteString(field)
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Is reports whether target is ErrInvalidConfig.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

// Rule ids carried by WideningError.Rule.
const (
	// RuleZoneMode: rw asked on a zone (or workspace) the parent has read-only.
	RuleZoneMode = "zone-mode"
	// RuleUnknownZone: a zone the parent does not have.
	RuleUnknownZone = "unknown-zone"
	// RuleRestrictOutside: a restrict path that is not a directory of the
	// parent's workspace.
	RuleRestrictOutside = "restrict-outside"
	// RuleNetwork: network asked while the parent has none.
	RuleNetwork = "network"
	// RuleNetworkAllow: network destinations the parent's allow list does not
	// cover.
	RuleNetworkAllow = "network-allow"
	// RuleMaxDepth: a worker chain deeper than delegation.max_depth.
	RuleMaxDepth = "max-depth"
	// RuleReadonly is reserved for a request that would make a read-only
	// path writable. Derive reports rw asked on a read-only workspace or zone
	// as RuleZoneMode, because WorkerRequest.Readonly can only narrow.
	RuleReadonly = "readonly"
)

// LimitRule returns the rule id for a limit that a worker raises above its
// parent's: "limit-" plus the limit's YAML key ("limit-memory").
func LimitRule(key string) string { return "limit-" + key }

// WideningError is one way in which a worker asks for more than its parent
// allows. Derive returns all of them at once, joined with errors.Join.
type WideningError struct {
	// Worker is the name of the worker that asked.
	Worker string
	// Rule is the short rule id: zone-mode, unknown-zone, restrict-outside,
	// network, network-allow, limit-<key>, max-depth.
	Rule string
	// Detail says what was asked and what the parent allows.
	Detail string
}

// Error renders the refusal as
// `worker "fmt": rule zone-mode: asks rw on zone "cache" but the parent has it read-only`.
func (e *WideningError) Error() string {
	return fmt.Sprintf("worker %q: rule %s: %s", e.Worker, e.Rule, e.Detail)
}

// Is reports whether target is ErrWidening.
func (e *WideningError) Is(target error) bool { return target == ErrWidening }

// ErrUnenforceable reports a part of the sandbox that cannot be enforced:
// by the OCI translation (a read-only mount with submounts on a kernel
// without recursive read-only binds, a guard on a symlink) or by a backend
// (runner and darwin return this same sentinel), so one errors.Is matches
// every such refusal.
var ErrUnenforceable = errors.New("cannot be enforced by the OS sandbox")
