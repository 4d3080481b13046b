package mounts

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error of this package that concerns a path is a
// *PathError whose Is method matches one of these.
var (
	// ErrOutsideSandbox means the path is not mounted in the sandbox.
	ErrOutsideSandbox = errors.New("outside the sandbox")
	// ErrReadOnly means the path is readable but not writable: it lies in a
	// read-only mount or under a protect path.
	ErrReadOnly = errors.New("read-only")
	// ErrDenied means the path is on the sandbox's deny list.
	ErrDenied = errors.New("denied by the sandbox's deny list")
	// ErrSuffix means the mount's suffix list does not allow the file name.
	ErrSuffix = errors.New("file suffix not allowed")
	// ErrTooLarge means the file or content exceeds the mount's size limit.
	ErrTooLarge = errors.New("file too large")
	// ErrChanged means the path changed between the check and the use, for
	// example a symbolic link was swapped in; nothing was read or written.
	ErrChanged = errors.New("path changed between check and use")
	// ErrInvalidPath means the path is empty, contains a NUL byte or is too
	// long.
	ErrInvalidPath = errors.New("invalid path")
	// ErrLoop means resolving the path met more than MaxSymlinks symbolic
	// links, as the kernel's ELOOP.
	ErrLoop = errors.New("too many levels of symbolic links")
	// ErrNotFile means Read or Write met something other than a regular file.
	ErrNotFile = errors.New("not a regular file")
	// ErrTooMany means List stopped at MaxListResults matches or
	// MaxListScanned scanned entries.
	ErrTooMany = errors.New("too many entries")
	// ErrBinary means Read was asked for a file that is not text (NUL
	// bytes or invalid UTF-8): the file tools return text only.
	ErrBinary = errors.New("not a text file")
	// ErrInvalidSandbox means New was given a sandbox whose paths are not
	// absolute and clean, or whose targets collide.
	ErrInvalidSandbox = errors.New("invalid sandbox for a mount table")
	// ErrUnsupported means the file tools are not implemented on this OS.
	ErrUnsupported = errors.New("file tools not supported on this OS")
)

// Rules that a PathError names in its Rule field.
const (
	// RuleProtect is the rule of an ErrReadOnly caused by a protect path.
	RuleProtect = "protect"
	// RuleReadonly is the rule of an ErrReadOnly caused by a read-only mount.
	RuleReadonly = "readonly"
	// RuleDeny is the rule of an ErrDenied.
	RuleDeny = "deny"
	// RuleNoWorkspace is the rule of an ErrOutsideSandbox for a relative path
	// in a sandbox without a workspace.
	RuleNoWorkspace = "no workspace"
	// RuleSuffix is the rule of an ErrSuffix.
	RuleSuffix = "suffixes"
	// RuleMaxFileBytes is the rule of an ErrTooLarge.
	RuleMaxFileBytes = "max_file_bytes"
)

// PathError is the error of an operation on one sandbox path. Its message
// names the operation, the path, the reason and what the sandbox allows
// instead, so that a reader (often an LLM) can act on it.
type PathError struct {
	// Op is "read", "write" or "list".
	Op string
	// Path is the sandbox path as given (or as far as it was resolved).
	Path string
	// Err is the sentinel (ErrDenied, ErrReadOnly, ...) or an underlying
	// system error.
	Err error
	// Rule names the rule that refused the path: "protect", "readonly",
	// "deny", "suffixes", "max_file_bytes", or a short reason for
	// ErrInvalidPath.
	Rule string
	// Allowed lists what is allowed instead: the readable roots for
	// ErrOutsideSandbox (the writable ones for a write) and ErrDenied, the
	// writable roots (with their
	// protected exceptions) for ErrReadOnly, the suffixes for ErrSuffix.
	Allowed []string
	// Size and Limit are the file or content size and the mount's limit, in
	// bytes, for ErrTooLarge.
	Size, Limit int64

	// where is the mount target or path the rule belongs to, for messages.
	where string
	// cause is the system error behind an ErrChanged, for messages.
	cause error
}

// Error renders the message: "cannot OP PATH: REASON; ALLOWED".
func (e *PathError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot %s %s: ", e.Op, displayPath(e.Path))
	allowed := strings.Join(e.Allowed, ", ")
	if allowed == "" {
		allowed = "none"
	}
	switch e.Err {
	case ErrOutsideSandbox:
		b.WriteString("outside the sandbox")
		if e.Rule == RuleNoWorkspace {
			b.WriteString(" (a relative path needs a workspace, and this sandbox has none)")
		}
		if e.Op == "write" {
			fmt.Fprintf(&b, "; writable: %s", allowed)
		} else {
			fmt.Fprintf(&b, "; readable: %s", allowed)
		}
	case ErrDenied:
		b.WriteString("denied by the sandbox's deny list")
		if e.where != "" && e.where != e.Path {
			fmt.Fprintf(&b, " (%s)", e.where)
		}
		fmt.Fprintf(&b, "; readable: %s (except denied paths)", allowed)
	case ErrReadOnly:
		if e.Rule == RuleProtect {
			b.WriteString("protected path")
			if e.where != "" && e.where != e.Path {
				fmt.Fprintf(&b, " (%s)", e.where)
			}
		} else if e.where != "" {
			b.WriteString(e.where)
		} else {
			b.WriteString("read-only")
		}
		fmt.Fprintf(&b, "; writable: %s", allowed)
	case ErrSuffix:
		fmt.Fprintf(&b, "file suffix not allowed under %s; allowed suffixes: %s", e.where, allowed)
	case ErrTooLarge:
		if e.where == "limits.file_size" {
			fmt.Fprintf(&b, "%d bytes is over the limit of %d bytes (limits.file_size)", e.Size, e.Limit)
		} else {
			fmt.Fprintf(&b, "%d bytes is over the limit of %d bytes (max_file_bytes of %s)", e.Size, e.Limit, e.where)
		}
	case ErrChanged:
		b.WriteString("the path changed between check and use (a symbolic link or directory was swapped in); nothing was ")
		if e.Op == "write" {
			b.WriteString("written")
		} else {
			b.WriteString("read")
		}
		if e.cause != nil {
			fmt.Fprintf(&b, " (%v)", e.cause)
		}
	case ErrInvalidPath:
		fmt.Fprintf(&b, "invalid path: %s", e.Rule)
	case ErrUnsafeSource:
		b.WriteString(e.Rule)
	case ErrLoop:
		fmt.Fprintf(&b, "too many levels of symbolic links (more than %d)", MaxSymlinks)
	case ErrTooMany:
		fmt.Fprintf(&b, "%s; use a narrower path or pattern", e.Rule)
	case ErrBinary:
		fmt.Fprintf(&b, "a binary file (%s), and read returns text only; inspect it with a command instead (file, xxd, strings, od)", e.Rule)
	case ErrNotFile:
		b.WriteString("not a regular file")
		if e.Rule != "" {
			fmt.Fprintf(&b, " (%s)", e.Rule)
		}
	default:
		fmt.Fprintf(&b, "%v", e.Err)
	}
	return b.String()
}

// Unwrap returns the sentinel or system error.
func (e *PathError) Unwrap() error { return e.Err }

// Is reports whether target is the error's sentinel.
func (e *PathError) Is(target error) bool { return target != nil && target == e.Err }

// displayPath quotes odd paths and shortens very long ones so that a message
// stays readable.
func displayPath(p string) string {
	const max = 200
	q := p
	if strings.ContainsAny(p, "\x00\n\r\t ") || p == "" {
		q = fmt.Sprintf("%q", p)
	}
	if len(q) > max {
		q = q[:max] + fmt.Sprintf("... (%d bytes)", len(p))
	}
	return q
}

// ErrUnsafeSource is matched when a mount source is reached through a
// symlink inside a directory the sandbox (or a sandbox up its worker chain)
// can write: a command could have swapped a directory for that symlink to
// point the mount at any host path.
var ErrUnsafeSource = errors.New("mount source reached through a symlink the sandbox could have planted")
