package linux

import (
	"slices"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestDenyWatcherStarts: the watcher starts where the host shows a
// directory that a deny entry reaches, and not at all when none does (a run
// whose only deny path is cordon's trust store starts nothing).
func TestDenyWatcherStarts(t *testing.T) {
	base := func(deny ...string) *spec.Sandbox {
		return &spec.Sandbox{Root: "/home/u/proj", System: spec.System{Kind: spec.SystemNone}, Deny: deny,
			Mounts: []spec.Mount{{Source: "/data", Target: "/mnt/data"}}}
	}
	strict := base("/home/u/proj/.env")
	strict.StrictDeny = true
	for _, c := range []struct {
		name   string
		sb     *spec.Sandbox
		starts []string // nil: no watcher
	}{
		{"no deny", base(), nil},
		{"strict_deny holds it", strict, nil},
		{"only where the sandbox shows nothing of the host", base("/root/.config/cordon/trusted", "/tmp/x"), nil},
		{"a path", base("/home/u/proj/.env"), []string{"/home/u/proj"}},
		{"a missing path's parent", base("/home/u/proj/a/b/.env"), []string{"/home/u/proj/a/b"}},
		{"a pattern's literal prefix", base("/home/u/proj/**/*.pem", "/mnt/data/keys/*.pem"), []string{"/home/u/proj", "/mnt/data/keys"}},
		{"a pattern above the zones", base("/home/u/*/.env", "/mnt/**/id_*"), []string{"/home/u/proj", "/mnt/data"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newDenyWatcher(c.sb)
			switch {
			case c.starts == nil && w != nil:
				t.Fatalf("want no watcher, got one starting at %v", w.starts)
			case c.starts != nil && w == nil:
				t.Fatalf("want a watcher starting at %v, got none", c.starts)
			case w != nil && !slices.Equal(w.starts, c.starts):
				t.Fatalf("starts %v, want %v", w.starts, c.starts)
			}
		})
	}
}

// TestDenyWatcherMatches: what the walk and the events cover, and where
// they go on.
func TestDenyWatcherMatches(t *testing.T) {
	sb := &spec.Sandbox{Root: "/ws", System: spec.System{Kind: spec.SystemNone},
		Deny: []string{"/ws/.env", "/ws/**/*.pem", "/ws/conf/secrets", "/ws/a/**"}}
	w := newDenyWatcher(sb)
	for _, c := range []struct {
		dir, name string
		matched   bool
		reaches   bool // for a directory that is not matched
	}{
		{"/ws", ".env", true, false},
		{"/ws/sub", ".env", false, true}, // .env is a path, not **/.env; sub may hold a .pem
		{"/ws/sub/deep", "key.pem", true, false},
		{"/ws", "key.pem", true, false},
		{"/ws", "key.pem.txt", false, true},
		{"/ws", "conf", false, true},
		{"/ws/conf", "secrets", true, false},
		{"/ws/conf", "other", false, true}, // may hold a .pem
		{"/ws", "a", true, false},          // "/ws/a/**" matches a itself
	} {
		if got := w.matched(c.dir, c.name) != ""; got != c.matched {
			t.Errorf("matched(%s, %s) = %v, want %v", c.dir, c.name, got, c.matched)
		}
		if !c.matched {
			if got := w.reaches(c.dir + "/" + c.name); got != c.reaches {
				t.Errorf("reaches(%s/%s) = %v, want %v", c.dir, c.name, got, c.reaches)
			}
		}
	}
	lit := newDenyWatcher(&spec.Sandbox{Root: "/ws", System: spec.System{Kind: spec.SystemNone}, Deny: []string{"/ws/conf/secrets"}})
	for p, want := range map[string]bool{"/ws/conf": true, "/ws/other": false, "/ws/conf/x": false} {
		if got := lit.reaches(p); got != want {
			t.Errorf("literal: reaches(%s) = %v, want %v", p, got, want)
		}
	}
}
