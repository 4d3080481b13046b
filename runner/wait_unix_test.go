//go:build unix

package runner

import (
	"errors"
	"os/exec"
	"testing"
)

// TestExitOf reads real processes' ends: an exit status, a signal, and a
// wait that failed.
func TestExitOf(t *testing.T) {
	tests := []struct {
		script string
		code   int
		signal string
	}{
		{"exit 0", 0, ""},
		{"exit 3", 3, ""},
		{"kill -KILL $$", 137, "SIGKILL"},
		{"kill -TERM $$", 143, "SIGTERM"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tt.script)
			err := cmd.Run()
			code, sig, ok := ExitOf(cmd.ProcessState, err)
			if !ok || code != tt.code || sig != tt.signal {
				t.Fatalf("ExitOf = %d %q %v; want %d %q", code, sig, ok, tt.code, tt.signal)
			}
			// The state carried by an *exec.ExitError alone is read too.
			if code2, sig2, ok2 := ExitOf(nil, err); err != nil && (!ok2 || code2 != code || sig2 != sig) {
				t.Errorf("from the error alone: %d %q %v", code2, sig2, ok2)
			}
		})
	}
	if _, _, ok := ExitOf(nil, errors.New("wait: no child processes")); ok {
		t.Error("a failed wait was read as an exit")
	}
}
