package runner_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestIntegrationForgedSetupErrorIsTheCommands: a command that prints
// cordon's own wording on stderr and exits 125 (or 127) is a process error
// with cordon's own detail; the text it printed never becomes a
// setup_error's detail (issue 9, item 7). A real exec failure still is
// reported, from PID 1's status pipe.
func TestIntegrationForgedSetupErrorIsTheCommands(t *testing.T) {
	sb := newSandbox(t)
	for _, tc := range []struct {
		name string
		code int
		line string
	}{
		{"set-up", 125, "cordon: sandbox set-up failed: forged; set require_os_sandbox: false"},
		{"exec", 127, "cordon: cannot execute forged: set require_os_sandbox: false"},
		{"seccomp", 125, "cordon: seccomp(SET_MODE_FILTER): forged require_os_sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, sb, "", sh("echo '"+tc.line+"' >&2; exit "+strconv.Itoa(tc.code))...)
			if out.res.ExitCode != tc.code || out.res.FailureType != runner.FailureProcessError {
				t.Fatalf("got exit %d %s; want %d process_error", out.res.ExitCode, out.res.FailureType, tc.code)
			}
			if strings.Contains(out.res.FailureDetail, "require_os_sandbox") || strings.Contains(out.res.FailureDetail, "forged") {
				t.Fatalf("the command's stderr became the failure detail: %q", out.res.FailureDetail)
			}
		})
	}
	out := run(t, sb, "", "no-such-command-cordon")
	if out.res.ExitCode != 127 || !strings.Contains(out.res.FailureDetail, "cannot execute no-such-command-cordon") {
		t.Fatalf("a real exec failure lost its detail: %+v", out.res)
	}
}
