package session

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// A warm session types each exec's refusals from the broker's own record,
// never from what the command printed: the broker tells the session of
// each refusal with the sockets held by the caller's exec tracker (the
// shim that runs the exec, a child of the sandbox's PID 1, which holds
// its socket to the supervisor, and runs one exec at a time, until the
// command's whole tree has ended), and the supervisor, which made that
// socket pair, knows the exec the shim runs by the inode of the shim's
// end.

// maxExecDenials bounds what one exec's record holds.
const maxExecDenials = 1000

// execDenials collects the refusals of each running exec, by the inode of
// its shim's socket.
type execDenials struct {
	mu sync.Mutex
	by map[uint64][]broker.Denial
}

// watch starts collecting for the exec whose shim's socket is inode ino,
// and returns ino.
func (w *execDenials) watch(ino uint64) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.by == nil {
		w.by = map[uint64][]broker.Denial{}
	}
	w.by[ino] = []broker.Denial{}
	return ino
}

// take stops collecting for the exec and returns what it collected.
func (w *execDenials) take(ino uint64) []broker.Denial {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.by[ino]
	delete(w.by, ino)
	return d
}

// Denied implements broker.Observer, for the backend's session policy.
func (w *execDenials) Denied(d broker.Denial) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ino := range d.Trackers {
		if l, ok := w.by[ino]; ok && len(l) < maxExecDenials {
			w.by[ino] = append(l, d)
			return
		}
	}
}

// execDenialsExplainer explains an exec's failure by the broker's record
// of its own refusals (a protect or deny rule's, a .git redirect's, or a
// read-only mount's), in the mount table's words when it has them (what
// the path is, and what IS writable).
func execDenialsExplainer(d []broker.Denial, table *mounts.Table, explainBroker func([]broker.Denial) runner.Explainer) runner.Explainer {
	return func(o runner.Outcome, res *runner.Result) bool {
		if len(d) == 0 {
			return false
		}
		first := d[0]
		for _, x := range d {
			if x.Rule != broker.ReadOnly {
				first = x // a rule's refusal says more than EROFS
				break
			}
		}
		var detail string
		if table != nil {
			// A deny rule refuses reads too (strict_deny brings them
			// here): its path is checked as a read, so the message says
			// "cannot read" for a read as for a write.
			write := !strings.HasPrefix(first.Rule, "deny ")
			if err := table.Check(first.Path, write); err != nil {
				detail = fmt.Sprintf("%s of %s was refused: %v", first.Op, first.Path, err)
			}
		}
		if detail == "" && first.Rule != broker.ReadOnly {
			return explainBroker([]broker.Denial{first})(o, res)
		}
		if detail == "" {
			detail = fmt.Sprintf("%s of %s was refused: a read-only file system", first.Op, first.Path)
		}
		if n := len(d) - 1; n > 0 {
			detail += fmt.Sprintf(" (and %d more refused call", n)
			if n > 1 {
				detail += "s"
			}
			detail += ")"
		}
		*res = runner.Denied(*res, runner.Denial{Path: first.Path, Detail: detail})
		return true
	}
}

// readDenials explains a failure by the stderr lines about reading only
// (and about the network): a read of a denied path fails in the kernel,
// through a mount, and never reaches the broker. A line about writing is
// never believed: the broker's record says what it refused.
func readDenials(p runner.Policy, sb *spec.Sandbox) runner.Explainer {
	return func(o runner.Outcome, res *runner.Result) bool {
		d, ok := runner.ClassifyReadDenial(p, sb, o.Cwd, o.Stderr)
		if ok {
			*res = runner.Denied(*res, d)
		}
		return ok
	}
}

// DeniedCalls is the broker's record d as a Result lists it: an exec's,
// and a cold run's (runner/linux).
func DeniedCalls(d []broker.Denial) []runner.DeniedCall {
	out := make([]runner.DeniedCall, 0, len(d))
	for _, x := range d {
		out = append(out, runner.DeniedCall{Op: x.Op, Path: x.Path, Rule: x.Rule})
	}
	return out
}
