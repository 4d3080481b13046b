package audit

import (
	"github.com/cordon-run/cordon/internal/netguard/netevent"
	"github.com/cordon-run/cordon/spec"
)

// EventSession is written when a warm session starts; each of its execs
// is then recorded as a run.
const EventSession = "session"

// Session records that a warm session of sb is about to start. It is
// written before the sandbox is built: the log files then exist, so the
// sandbox masks them (a log missing at that point would be covered by an
// empty placeholder directory for the session's whole life, and every
// later record would fail), and a log that cannot be written stops the
// session before it starts.
func (l *Log) Session(sb *spec.Sandbox) error {
	r, err := l.sandboxRecord(EventSession, sb)
	if err != nil {
		return err
	}
	return l.Append(r)
}

// SessionNetwork records the network decisions of a warm session of sb
// that no exec reported (made after its last exec ended), as net records
// without a run id, when the session is closed.
func (l *Log) SessionNetwork(sb *spec.Sandbox, evs []netevent.Event) error {
	base, err := l.sandboxRecord(EventNet, sb)
	if err != nil {
		return err
	}
	recs := make([]Record, 0, len(evs))
	for i := range evs {
		e := evs[i]
		recs = append(recs, Record{Event: EventNet, Sandbox: base.Sandbox, Lineage: base.Lineage, Rule: e.Rule, Detail: e.Detail, Network: &e})
	}
	return l.Append(recs...)
}
