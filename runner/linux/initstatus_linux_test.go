package linux

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// TestCommandExitFromInitStatus: PID 1's "exited" record, not its exit
// status, tells a command killed by a signal from one that exited 128+n; a
// record that disagrees with PID 1's own status, or a PID 1 that was
// killed, leaves PID 1's wait status in charge.
func TestCommandExitFromInitStatus(t *testing.T) {
	rec := func(ws uint32) string { return fmt.Sprintf("started -\nexited %d\n", ws) }
	segv := uint32(unix.SIGSEGV)
	tests := []struct {
		name     string
		initCode int
		initSig  string
		status   string
		wantCode int
		wantSig  string
	}{
		{"signal", 139, "", rec(segv), 139, "SIGSEGV"},
		{"exit 139 is no signal", 139, "", rec(139 << 8), 139, ""},
		{"SIGXFSZ", 153, "", rec(uint32(unix.SIGXFSZ)), 153, "SIGXFSZ"},
		{"no record", 139, "", "started -\n", 139, ""},
		{"garbled record", 139, "", "started -\nexited x\n", 139, ""},
		{"record disagrees with the exit status", 3, "", rec(segv), 3, ""},
		{"init killed", 137, "SIGKILL", rec(segv), 137, "SIGKILL"},
		{"stopped is no end", 139, "", rec(0x7f | uint32(unix.SIGSTOP)<<8), 139, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, sig := commandExit(tt.initCode, tt.initSig, runner.ParseInitStatus(tt.status))
			if code != tt.wantCode || sig != tt.wantSig {
				t.Fatalf("got %d %q, want %d %q", code, sig, tt.wantCode, tt.wantSig)
			}
		})
	}
}
