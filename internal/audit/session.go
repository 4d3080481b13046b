package audit

import (
	"strings"

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
	r := Record{Event: EventSession}
	if sb != nil {
		r.Lineage = append([]string{}, sb.Lineage...)
		d, err := spec.SandboxDigest(sb)
		if err != nil {
			return &WriteError{Path: strings.Join(l.Paths(), ", "), Err: err}
		}
		r.Sandbox = d
	}
	return l.Append(r)
}
