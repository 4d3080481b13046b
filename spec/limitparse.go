package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MinMemory is the smallest memory limit a sandbox takes: below it the
// sandbox's own init cannot start, and the run would fail with the kernel's
// or libcontainer's raw words instead of this rule (Docker's floor is 6 MB
// too).
const MinMemory = 6 << 20

// LimitError is a limit that breaks its rule. Its message names the limit,
// the value, the problem and the fix.
type LimitError struct {
	// Name is the limit: timeout, memory, pids, file_size, cpus, output.
	Name, Value, Problem, Fix string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s %q: %s; fix: %s", e.Name, e.Value, e.Problem, e.Fix)
}

// Unwrap makes a LimitError match ErrInvalidConfig.
func (e *LimitError) Unwrap() error { return ErrInvalidConfig }

// limitFixes say how to write each limit.
var limitFixes = map[string]string{
	"timeout":   durationHint,
	"memory":    `give a size such as "512MiB"`,
	"pids":      "give the maximum number of processes, such as 256",
	"file_size": `give a size such as "100MiB"`,
	"cpus":      "give a number of cores above zero, such as 1.5",
	"output":    `give a size such as "1MiB"`,
}

// ParseLimit reads one limit as written in cordon.yaml's limits and in the
// command line's flags ("30s", "512MiB", "256", "1.5"). It is the one
// validator both use, so a value one refuses the other refuses too. It
// returns Limits with that one field set, or a *LimitError; a limit that
// is given must be above zero (zero means "no limit": leave it out).
func ParseLimit(name, text string) (Limits, error) {
	var l Limits
	fail := func(problem string) (Limits, error) {
		return Limits{}, &LimitError{Name: name, Value: text, Problem: problem, Fix: limitFixes[name]}
	}
	if strings.IndexByte(text, 0) >= 0 {
		return fail("contains a NUL byte")
	}
	switch name {
	case "timeout":
		t, err := parseDuration(text)
		if err != nil {
			return fail(err.Error())
		}
		if t <= 0 {
			return fail(fmt.Sprintf("must be above zero, not %q", text))
		}
		l.Timeout = t
	case "memory", "file_size", "output":
		n, err := ParseBytes(text)
		if err != nil {
			return fail(err.Error())
		}
		if n <= 0 {
			return fail(fmt.Sprintf("must be above zero, not %q", text))
		}
		if name == "memory" && n < MinMemory {
			return fail(fmt.Sprintf("is below the smallest memory limit a sandbox can start with (%s)", FormatBytes(MinMemory)))
		}
		switch name {
		case "memory":
			l.Memory = n
		case "file_size":
			l.FileSize = n
		default:
			l.Output = n
		}
	case "pids":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return fail("is not a whole number")
		}
		if n <= 0 {
			return fail(fmt.Sprintf("must be above zero, not %d", n))
		}
		l.Pids = n
	case "cpus":
		c, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || math.IsNaN(c) || math.IsInf(c, 0) {
			return fail(fmt.Sprintf("%q is not a finite number", text))
		}
		if c <= 0 {
			return fail(fmt.Sprintf("must be above zero, not %s", strings.TrimSpace(text)))
		}
		l.CPUs = c
	default:
		return Limits{}, fmt.Errorf("%w: unknown limit %q", ErrInvalidConfig, name)
	}
	return l, nil
}
