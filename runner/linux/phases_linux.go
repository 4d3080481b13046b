package linux

import (
	"time"

	"github.com/sirupsen/logrus"
)

// phases times the steps of a run for CORDON_LOG=debug, so that where the
// time goes is measured, not guessed.
type phases struct {
	start, last time.Time
	fields      logrus.Fields
}

func newPhases() *phases {
	now := time.Now()
	return &phases{start: now, last: now, fields: logrus.Fields{}}
}

func (p *phases) mark(name string) {
	now := time.Now()
	p.fields[name+"_ms"] = float64(now.Sub(p.last).Microseconds()) / 1000
	p.last = now
}

func (p *phases) log() {
	if !logrus.IsLevelEnabled(logrus.DebugLevel) {
		return
	}
	p.fields["total_ms"] = float64(time.Since(p.start).Microseconds()) / 1000
	logrus.WithFields(p.fields).Debug("run phases")
}
