package linux

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// TestClassifyStartError types the errors libcontainer reports when the
// command cannot start.
func TestClassifyStartError(t *testing.T) {
	tests := []struct {
		err    error
		code   int
		ft     runner.FailureType
		detail string
	}{
		{errors.New(`exec: "nosuch": executable file not found in $PATH`), runner.ExitNotFound, runner.FailureProcessError, "command not found"},
		{errors.New("exec: /w/x: no such file or directory"), runner.ExitNotFound, runner.FailureProcessError, "command not found"},
		{errors.New("exec /w/x: permission denied"), runner.ExitNotRunnable, runner.FailureProcessError, "cannot be executed"},
		{errors.New("exec /w/x: exec format error"), runner.ExitNotRunnable, runner.FailureProcessError, "cannot be executed"},
		{errors.New("unable to start container process: error during container init: mount: permission denied"), runner.ExitSetupError, runner.FailureSetupError, "sandbox set-up failed: start: unable"},
		{fmt.Errorf("wrapped: %w", errors.New("container process is already dead")), runner.ExitSetupError, runner.FailureSetupError, "already dead"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			res := classifyStartError(runner.Result{Backend: "libcontainer"}, tt.err)
			if res.ExitCode != tt.code || res.FailureType != tt.ft || !strings.Contains(res.FailureDetail, tt.detail) {
				t.Fatalf("got %d %s %q; want %d %s containing %q", res.ExitCode, res.FailureType, res.FailureDetail, tt.code, tt.ft, tt.detail)
			}
			if res.Backend != "libcontainer" {
				t.Error("the result lost its backend")
			}
		})
	}
}
