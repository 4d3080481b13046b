package linux

import (
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestRootlessLimitsCap: doctor names the path a rootless user has to
// limits: the delegated cgroup, a partial one, or none and the way out.
func TestRootlessLimitsCap(t *testing.T) {
	tests := []struct {
		d    runner.Delegation
		ok   bool
		want string
	}{
		{runner.Delegation{Base: "/a/b", Controllers: []string{"cpu", "memory", "pids"}}, true, "delegated cgroup /a/b"},
		{runner.Delegation{Base: "/a/b", Controllers: []string{"pids"}}, false, "partly: the delegated cgroup /a/b lacks the memory, cpu controller"},
		{runner.Delegation{Base: "/a/b", Controllers: []string{"io"}}, false, "systemd-run --user --scope"},
		{noDelegation, false, "systemd-run --user --scope -p Delegate=yes"},
		{cgroupV1, false, "on cgroup v1 no systemd scope or delegated subtree can help"},
		{runner.Delegation{Base: "/u/user@1000.service", Controllers: []string{"cpu", "memory", "pids"}, Systemd: true}, true, "the user's systemd (cgroup /u/user@1000.service"},
	}
	for _, tt := range tests {
		c := rootlessLimitsCap(tt.d)
		if c.Name != "rootless limits" || c.OK != tt.ok || !strings.Contains(c.Detail, tt.want) {
			t.Errorf("%+v: got %+v, want ok %v and %q", tt.d, c, tt.ok, tt.want)
		}
	}
}

// TestNestedIn: PID 1's command line tells a doctor that it runs inside a
// cordon sandbox (a run's or a session's), and nothing else does.
func TestNestedIn(t *testing.T) {
	for _, tc := range []struct{ cmdline, want string }{
		{"/proc/self/exe\x00cordon-sandbox-init\x00--\x00sh\x00", "cordon-sandbox-init"},
		{"/proc/self/exe\x00cordon-session-init\x00", "cordon-session-init"},
		{"/sbin/init\x00splash\x00", ""},
		{"sh\x00-c\x00echo cordon-sandbox-init\x00", ""},
		{"", ""},
	} {
		if got := nestedIn([]byte(tc.cmdline)); got != tc.want {
			t.Errorf("nestedIn(%q) = %q, want %q", tc.cmdline, got, tc.want)
		}
	}
}
