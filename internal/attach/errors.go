package attach

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels matched by every *Error of this package.
var (
	// ErrOutside means the parent sandbox cannot read the path: it is
	// outside every mount, on the deny list, or not a valid path.
	ErrOutside = errors.New("attachment outside the parent sandbox")
	// ErrNotFile means the path is missing or is not a regular file.
	ErrNotFile = errors.New("attachment is not a regular file")
	// ErrCount means more attachments were given than the policy allows.
	ErrCount = errors.New("too many attachments")
	// ErrSize means the attachments are larger than the policy allows in
	// total, or one is larger than its mount's max_file_bytes.
	ErrSize = errors.New("attachments too large")
	// ErrSuffix means a file's suffix is not allowed, by the policy or by
	// the parent mount's suffix list.
	ErrSuffix = errors.New("attachment suffix not allowed")
	// ErrChild means the child sandbox could not show the attachment: its
	// deny list hides the path, or another mount already uses the target.
	ErrChild = errors.New("attachment cannot be shown in the child sandbox")
)

// Rules named by Error.Rule.
const (
	RuleOutside   = "outside"
	RuleDeny      = "deny"
	RuleNotFile   = "not-a-file"
	RuleCount     = "count"
	RuleTotalSize = "total-size"
	RuleFileSize  = "max_file_bytes"
	RuleSuffix    = "suffix"
	RuleChildDeny = "child-deny"
	RuleTarget    = "target-in-use"
)

// Error is one refused attachment, or a refusal of the whole set (Path is
// then "").
type Error struct {
	// Path is the attachment as given.
	Path string
	// Rule is the short rule id: outside, deny, not-a-file, count,
	// total-size, max_file_bytes, suffix, child-deny, target-in-use.
	Rule string
	// Detail says what is wrong and what IS allowed.
	Detail string
	// Allowed lists what is allowed instead: the parent's readable roots,
	// or the allowed suffixes.
	Allowed []string
	// Err is the sentinel the error matches.
	Err error
	// cause is the query API's error behind the refusal, if any.
	cause error
}

// Error renders "cannot attach PATH: DETAIL".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cannot attach")
	if e.Path != "" {
		fmt.Fprintf(&b, " %q", e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Detail)
	return b.String()
}

// Is reports whether target is the error's sentinel.
func (e *Error) Is(target error) bool { return target != nil && target == e.Err }

// Unwrap returns the query API's error (a *mounts.PathError), if any, so
// that errors.Is also matches the mounts sentinels.
func (e *Error) Unwrap() error { return e.cause }
