package spec

import (
	"errors"
	"testing"
	"time"
)

// TestOverridesApply checks the run-time flags' rules: on the top-level
// sandbox they change it freely, on a derived one they may only narrow,
// and a refused override leaves an error that names the flag.
func TestOverridesApply(t *testing.T) {
	dir := t.TempDir()
	top := func() *Sandbox {
		return &Sandbox{Root: dir, Mounts: []Mount{{Source: dir, Target: "/data"}}, Limits: Limits{Timeout: time.Minute, Memory: 1 << 30, Pids: 100}}
	}
	derived := func() *Sandbox {
		sb := top()
		sb.Lineage = []string{"w"}
		return sb
	}
	rows := []struct {
		name string
		sb   func() *Sandbox
		o    Overrides
		want error // nil: applied
		ok   func(*Sandbox) bool
	}{
		{"top: network", top, Overrides{Network: true}, nil, func(sb *Sandbox) bool { return sb.Network.Enabled }},
		{"top: mount", top, Overrides{Mounts: []string{dir + ":/extra:ro"}, Dir: dir}, nil,
			func(sb *Sandbox) bool {
				return len(sb.Mounts) == 2 && sb.Mounts[1].Target == "/extra" && sb.Mounts[1].Readonly
			}},
		{"top: raise timeout", top, Overrides{Timeout: time.Hour}, nil, func(sb *Sandbox) bool { return sb.Limits.Timeout == time.Hour }},
		{"top: mount target taken", top, Overrides{Mounts: []string{dir + ":/data"}, Dir: dir}, ErrInvalidConfig, nil},
		{"top: mount under /proc", top, Overrides{Mounts: []string{dir + ":/proc/x"}, Dir: dir}, ErrInvalidConfig, nil},
		{"top: bad memory", top, Overrides{Memory: "lots"}, ErrInvalidConfig, nil},
		{"top: negative pids", top, Overrides{Pids: -1}, ErrInvalidConfig, nil},
		{"top: memory below the floor", top, Overrides{Memory: "10"}, ErrInvalidConfig, nil},
		{"derived: readonly", derived, Overrides{Readonly: true}, nil, func(sb *Sandbox) bool { return sb.Readonly && sb.Mounts[0].Readonly }},
		{"derived: lower limits", derived, Overrides{Timeout: time.Second, Memory: "8MiB", Pids: 5}, nil,
			func(sb *Sandbox) bool {
				return sb.Limits.Timeout == time.Second && sb.Limits.Memory == 8<<20 && sb.Limits.Pids == 5
			}},
		{"derived: network", derived, Overrides{Network: true}, ErrWidening, nil},
		{"derived: mount", derived, Overrides{Mounts: []string{dir + ":/extra"}, Dir: dir}, ErrWidening, nil},
		{"derived: raise timeout", derived, Overrides{Timeout: time.Hour}, ErrWidening, nil},
		{"derived: raise memory", derived, Overrides{Memory: "2GiB"}, ErrWidening, nil},
		{"derived: raise pids", derived, Overrides{Pids: 1000}, ErrWidening, nil},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			sb := row.sb()
			err := row.o.Apply(sb)
			if row.want != nil {
				if !errors.Is(err, row.want) {
					t.Fatalf("Apply = %v, want %v", err, row.want)
				}
				return
			}
			if err != nil || !row.ok(sb) {
				t.Fatalf("Apply = %v; sandbox %+v", err, sb)
			}
		})
	}
}
