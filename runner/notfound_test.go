package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// TestHostCommandHint: a command not found inside (exit 127, from the
// init's exec or a shell's message) that the caller's PATH has in a folder
// the sandbox does not show gets the host path and the -v that mounts it;
// one under a denied folder gets the deny list as the reason and no -v;
// a command the sandbox shows, any other exit and any other type are left
// as they are.
func TestHostCommandHint(t *testing.T) {
	ws, hostbin, denied := t.TempDir(), t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(hostbin, "mytool"), filepath.Join(denied, "dtool"), filepath.Join(ws, "wstool")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", strings.Join([]string{hostbin, denied, ws, "relative"}, ":"))
	table, err := mounts.New(&spec.Sandbox{Root: ws, System: spec.System{Kind: spec.SystemHost}, Deny: []string{denied}})
	if err != nil {
		t.Fatal(err)
	}
	mount := "-v " + hostbin + ":" + hostbin + ":ro"
	execd := &InitStatus{Started: true, ExecCode: 127}
	tests := []struct {
		name      string
		code      int
		ftype     FailureType
		init      *InitStatus
		stderr    string
		args      []string
		want, not string
	}{
		{"exec", 127, FailureProcessError, execd, "", []string{"mytool"}, mount, ""},
		{"dash", 127, FailureProcessError, nil, "sh: 1: mytool: not found\n", []string{"sh", "-c", "mytool"}, mount, ""},
		{"bash", 127, FailureProcessError, nil, "bash: line 1: mytool: command not found\n", []string{"bash", "-c", "mytool"}, mount, ""},
		{"zsh", 127, FailureProcessError, nil, "zsh: command not found: mytool\n", []string{"zsh"}, mount, ""},
		{"env", 127, FailureProcessError, nil, "env: 'mytool': No such file or directory\n", []string{"env", "mytool"}, mount, ""},
		{"denied", 127, FailureProcessError, execd, "", []string{"dtool"}, "deny list", "-v "},
		{"shown", 127, FailureProcessError, execd, "", []string{"wstool"}, "", "on the host"},
		{"path given", 127, FailureProcessError, execd, "", []string{"./mytool"}, "", "on the host"},
		{"not on the host", 127, FailureProcessError, execd, "", []string{"nosuch"}, "", "on the host"},
		{"other exit", 1, FailureProcessError, nil, "sh: 1: mytool: not found\n", []string{"sh"}, "", "on the host"},
		{"other type", 127, FailureSandboxDenied, execd, "", []string{"mytool"}, "", "on the host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Result{ExitCode: tt.code, FailureType: tt.ftype, FailureDetail: "base"}
			got := HostCommandHint(res, Outcome{ExitCode: tt.code, Init: tt.init, Stderr: tt.stderr}, tt.args, table)
			if !strings.HasPrefix(got.FailureDetail, "base") || tt.want != "" && !strings.Contains(got.FailureDetail, tt.want) ||
				tt.not != "" && strings.Contains(got.FailureDetail, tt.not) {
				t.Errorf("detail %q, want %q and not %q", got.FailureDetail, tt.want, tt.not)
			}
		})
	}
}
