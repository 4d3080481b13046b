package ociruntime_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestOCICommandLine runs cordon-oci itself with runc's command line:
// the version, the features JSON, and refusals with runc's exit codes and
// the message in the runtime log, as text or as JSON.
func TestOCICommandLine(t *testing.T) {
	testenv.SkipIfShort(t, "runs the cordon-oci binary")
	root := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantLog  string // in the --log file, when the row sets one
		json     bool
	}{
		{name: "version", args: []string{"--version"}, wantOut: "cordon-oci version"},
		{name: "features", args: []string{"features"}, wantOut: `"ociVersionMax"`},
		{name: "no such container", args: []string{"--log-format", "json", "state", "nope"}, wantCode: 1, wantLog: "container does not exist", json: true},
		{name: "unsupported command", args: []string{"checkpoint", "x"}, wantCode: 1, wantLog: "not supported by cordon-oci: command"},
		{name: "exec failure is 255", args: []string{"exec", "nope", "true"}, wantCode: 255, wantLog: "container does not exist"},
		{name: "bad log format", args: []string{"--log-format", "xml", "list"}, wantCode: 1},
		{name: "root is /", args: []string{"--root", "/", "list"}, wantCode: 1},
		{name: "relative audit folder", args: []string{"--audit-dir", "audit", "list"}, wantCode: 1, wantLog: "is not an absolute path; fix: give the audit folder"},
		{name: "unknown flag", args: []string{"create", "--nope", "x"}, wantCode: 1, wantLog: "incorrect usage"},
		{name: "missing id", args: []string{"kill"}, wantCode: 1, wantLog: "requires a minimum of 1 argument"},
		{name: "bad signal", args: []string{"kill", "x", "SIGNOPE"}, wantCode: 1, wantLog: "container does not exist"},
		{name: "pidfd socket", args: []string{"create", "--pidfd-socket", "/x", "id"}, wantCode: 1, wantLog: "--pidfd-socket"},
		{name: "empty list", args: []string{"list", "--format", "json"}, wantOut: "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			args := append([]string{"--root", root, "--log", log}, tc.args...)
			if tc.name == "root is /" {
				args = tc.args
			}
			r := runCmd(t, nil, ociBin, args...)
			if r.code != tc.wantCode || !strings.Contains(r.stdout, tc.wantOut) {
				t.Fatalf("exit %d stdout %q stderr %q; want %d and %q", r.code, r.stdout, r.stderr, tc.wantCode, tc.wantOut)
			}
			if tc.name == "features" {
				var f map[string]any
				if err := json.Unmarshal([]byte(r.stdout), &f); err != nil {
					t.Errorf("features is not JSON: %v", err)
				}
			}
			if tc.wantLog == "" {
				return
			}
			b, _ := os.ReadFile(log)
			if !strings.Contains(string(b), tc.wantLog) {
				t.Errorf("log %q lacks %q", b, tc.wantLog)
			}
			if tc.json {
				var rec map[string]any
				if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &rec); err != nil || rec["level"] != "error" {
					t.Errorf("log is not a JSON error record: %q (%v)", b, err)
				}
			}
			// A failure logged to a file is on stderr too, as runc does.
			if !strings.Contains(r.stderr, tc.wantLog) {
				t.Errorf("stderr %q lacks %q", r.stderr, tc.wantLog)
			}
		})
	}
}
