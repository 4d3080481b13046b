package runner

import (
	"strings"
	"testing"
)

// TestRootlessLimitsCap: doctor names the path a rootless user has to
// limits: the delegated cgroup, a partial one, or none and the way out.
func TestRootlessLimitsCap(t *testing.T) {
	tests := []struct {
		d    delegation
		ok   bool
		want string
	}{
		{delegation{Base: "/a/b", Controllers: []string{"cpu", "memory", "pids"}}, true, "delegated cgroup /a/b"},
		{delegation{Base: "/a/b", Controllers: []string{"pids"}}, false, "partly: the delegated cgroup /a/b lacks the memory, cpu controller"},
		{delegation{Base: "/a/b", Controllers: []string{"io"}}, false, "systemd-run --user --scope"},
		{noDelegation, false, "systemd-run --user --scope -p Delegate=yes"},
		{delegation{Base: "/u/user@1000.service", Controllers: []string{"cpu", "memory", "pids"}, Systemd: true}, true, "the user's systemd (cgroup /u/user@1000.service"},
	}
	for _, tt := range tests {
		c := rootlessLimitsCap(tt.d)
		if c.Name != "rootless limits" || c.OK != tt.ok || !strings.Contains(c.Detail, tt.want) {
			t.Errorf("%+v: got %+v, want ok %v and %q", tt.d, c, tt.ok, tt.want)
		}
	}
}
