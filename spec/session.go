package spec

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Session bounds the life of a warm session (`cordon session start`, the
// Go API's StartSession, the MCP server's shell): it stops itself after
// IdleTimeout without a running command, and after MaxLifetime in any case.
type Session struct {
	// IdleTimeout is how long a session may sit with no command running
	// (default DefaultSessionIdle).
	IdleTimeout time.Duration
	// MaxLifetime is how long a session may live at all (default
	// DefaultSessionLifetime).
	MaxLifetime time.Duration
}

// The session bounds used when a config sets none.
const (
	DefaultSessionIdle     = time.Hour
	DefaultSessionLifetime = 12 * time.Hour
)

// DefaultSession returns the default session bounds.
func DefaultSession() Session {
	return Session{IdleTimeout: DefaultSessionIdle, MaxLifetime: DefaultSessionLifetime}
}

// session reads the top-level `session` mapping into s.
func (d *decoder) session(n *yaml.Node, s *Session) {
	f := d.fields(n, "session", []string{"idle_timeout", "max_lifetime"}, true)
	if t, ok := d.duration(f["idle_timeout"], "session.idle_timeout"); ok {
		s.IdleTimeout = t
	}
	if t, ok := d.duration(f["max_lifetime"], "session.max_lifetime"); ok {
		s.MaxLifetime = t
	}
}

// duration reads an optional positive Go duration.
func (d *decoder) duration(v *yaml.Node, field string) (time.Duration, bool) {
	if isNull(v) || !d.scalar(v, field, "a duration", durationHint, "!!str", "!!int", "!!float") {
		return 0, false
	}
	if strings.IndexByte(v.Value, 0) >= 0 {
		d.fail(field, v.Line, "contains a NUL byte", durationHint)
		return 0, false
	}
	t, err := parseDuration(v.Value)
	if err != nil {
		d.fail(field, v.Line, err.Error(), durationHint)
		return 0, false
	}
	if t <= 0 {
		d.fail(field, v.Line, fmt.Sprintf("must be above zero, not %q", v.Value), durationHint+", or remove the key for the default")
		return 0, false
	}
	return t, true
}
