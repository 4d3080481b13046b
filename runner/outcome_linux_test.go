package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestClassifyStartError types the errors libcontainer reports when the
// command cannot start.
func TestClassifyStartError(t *testing.T) {
	tests := []struct {
		err    error
		code   int
		ft     FailureType
		detail string
	}{
		{errors.New(`exec: "nosuch": executable file not found in $PATH`), ExitNotFound, FailureProcessError, "command not found"},
		{errors.New("exec: /w/x: no such file or directory"), ExitNotFound, FailureProcessError, "command not found"},
		{errors.New("exec /w/x: permission denied"), ExitNotRunnable, FailureProcessError, "cannot be executed"},
		{errors.New("exec /w/x: exec format error"), ExitNotRunnable, FailureProcessError, "cannot be executed"},
		{errors.New("unable to start container process: error during container init: mount: permission denied"), ExitSetupError, FailureSetupError, "sandbox set-up failed: start: unable"},
		{fmt.Errorf("wrapped: %w", errors.New("container process is already dead")), ExitSetupError, FailureSetupError, "already dead"},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			res := classifyStartError(Result{Backend: "libcontainer"}, tt.err)
			if res.ExitCode != tt.code || res.FailureType != tt.ft || !strings.Contains(res.FailureDetail, tt.detail) {
				t.Fatalf("got %d %s %q; want %d %s containing %q", res.ExitCode, res.FailureType, res.FailureDetail, tt.code, tt.ft, tt.detail)
			}
			if res.Backend != "libcontainer" {
				t.Error("the result lost its backend")
			}
		})
	}
}
