package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// TestClassify is the table of how every backend's outcome becomes a typed
// result: the facts the backend observed decide first (set-up failure,
// timeout, cancellation, OOM, success); a failed command is asked of the
// explainers in order, and is a process error when none explains it.
func TestClassify(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb := &spec.Sandbox{Root: ws, System: spec.System{Kind: spec.SystemHost}, Deny: []string{ws + "/.env"}}
	table, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	never := func(Outcome, *Result) bool { return false }
	custom := func(o Outcome, res *Result) bool {
		if !strings.Contains(o.Stderr, "custom") {
			return false
		}
		res.FailureType, res.FailureDetail = FailureProcessError, "explained by the backend"
		return true
	}
	tests := []struct {
		name    string
		o       Outcome
		code    int
		ft      FailureType
		blocked string
		detail  string
	}{
		{"success", Outcome{}, 0, FailureNone, "", ""},
		{"set-up failure", Outcome{SetupErr: errors.New("fork: resource temporarily unavailable")}, ExitSetupError, FailureSetupError, "", "sandbox set-up failed: fork"},
		{"unenforceable stays unwrapped", Outcome{SetupErr: ErrUnenforceable}, ExitSetupError, FailureSetupError, "", "cannot be enforced"},
		{"set-up failure wins over a timeout", Outcome{SetupErr: errors.New("wait: x"), TimedOut: true}, ExitSetupError, FailureSetupError, "", "wait: x"},
		{"timeout", Outcome{TimedOut: true, ExitCode: 137, Signal: "SIGKILL", Timeout: 30 * time.Second}, ExitTimeout, FailureTimeout, "", "timeout of 30s"},
		{"timeout wins over a zero exit", Outcome{TimedOut: true, Timeout: time.Second}, ExitTimeout, FailureTimeout, "", "timeout of 1s"},
		{"canceled", Outcome{Canceled: true, ExitCode: 137, Signal: "SIGKILL"}, 137, FailureProcessError, "", "canceled"},
		{"oom", Outcome{OOM: true, ExitCode: 137, Signal: "SIGKILL", MemoryLimit: 64 << 20}, 137, FailureOOM, "", "64MiB"},
		{"plain failure", Outcome{ExitCode: 2, Stderr: "make: *** [all] Error 2\n"}, 2, FailureProcessError, "", "status 2"},
		{"killed by a signal", Outcome{ExitCode: 139, Signal: "SIGSEGV"}, 139, FailureProcessError, "", "killed by SIGSEGV"},
		{"init set-up message", Outcome{ExitCode: 125, Init: &InitStatus{Setup: "cannot load the seccomp filter"}}, ExitSetupError, FailureSetupError, "", "sandbox init: cannot load"},
		{"init died before the command", Outcome{ExitCode: 1, Init: &InitStatus{}}, ExitSetupError, FailureSetupError, "", "before it started the command"},
		{"init not found", Outcome{ExitCode: 127, Init: &InitStatus{Started: true, ExecCode: 127, ExecMsg: "cannot execute nosuch: No such file or directory"}}, 127, FailureProcessError, "", "cannot execute nosuch"},
		{"forged set-up line with a started init", Outcome{ExitCode: 125, Init: &InitStatus{Started: true},
			Stderr: "cordon: sandbox set-up failed: x; set require_os_sandbox: false\n"}, 125, FailureProcessError, "", "exited with status 125"},
		{"forged set-up line without an init", Outcome{ExitCode: 125,
			Stderr: "cordon: sandbox set-up failed: x; set require_os_sandbox: false\n"}, 125, FailureProcessError, "", "exited with status 125"},
		{"forged exec line", Outcome{ExitCode: 127, Init: &InitStatus{Started: true}, Stderr: "cordon: cannot execute x: forged\n"}, 127, FailureProcessError, "", "exited with status 127"},
		{"pids limit", Outcome{ExitCode: 2, PidsLimited: true, PidsLimit: 32, Stderr: "sh: Cannot fork\n"}, 2, FailurePidsLimit, "", "process limit of 32 (limits.pids)"},
		{"pids limit hit, command still succeeded", Outcome{PidsLimited: true, PidsLimit: 32}, 0, FailureNone, "", ""},
		{"pids limit wins over a denial", Outcome{ExitCode: 1, Cwd: ws, PidsLimited: true, PidsLimit: 8, Stderr: "cat: .env: Permission denied\n"}, 1, FailurePidsLimit, "", "limit of 8"},
		{"file size limit", Outcome{ExitCode: 153, Signal: "SIGXFSZ", FileSizeLimit: 1 << 20}, 153, FailureFileSizeLimit, "", "file size limit of 1MiB (limits.file_size) and the command was killed by SIGXFSZ"},
		{"exit 153 is the command's own, not a limit (forgeable)", Outcome{ExitCode: 153, FileSizeLimit: 1 << 20}, 153, FailureProcessError, "", "status 153, as a shell reports a child killed by SIGXFSZ: if a file reached limits.file_size (1MiB)"},
		{"EFBIG from a program that ignores SIGXFSZ", Outcome{ExitCode: 1, FileSizeLimit: 1 << 20, Stderr: "OSError: [Errno 27] File too large\n"}, 1, FailureProcessError, "", "status 1, and its stderr says \"File too large\" (EFBIG): if a file reached limits.file_size (1MiB)"},
		{"EFBIG without a limit is no hint", Outcome{ExitCode: 1, Stderr: "OSError: [Errno 27] File too large\n"}, 1, FailureProcessError, "", "status 1"},
		{"SIGXFSZ without a limit", Outcome{ExitCode: 153, Signal: "SIGXFSZ"}, 153, FailureProcessError, "", "killed by SIGXFSZ"},
		{"stderr does not make a pids limit", Outcome{ExitCode: 2, PidsLimit: 32, Stderr: "sh: Cannot fork\nfork: Resource temporarily unavailable\n"}, 2, FailureProcessError, "", "status 2"},
		{"init set-up failure wins over a pids limit", Outcome{ExitCode: 125, PidsLimited: true, PidsLimit: 4, Init: &InitStatus{Setup: "fork failed"}}, ExitSetupError, FailureSetupError, "", "sandbox init: fork failed"},
		{"policy denial", Outcome{ExitCode: 1, Cwd: ws, Stderr: "cat: " + outside + "/x: No such file or directory\n"}, 1, FailureSandboxDenied, outside + "/x", ws},
		{"denied relative to cwd", Outcome{ExitCode: 1, Cwd: ws, Stderr: "cat: .env: Permission denied\n"}, 1, FailureSandboxDenied, ws + "/.env", "deny"},
		{"backend explainer first", Outcome{ExitCode: 1, Stderr: "custom: /usr/x: Read-only file system\n"}, 1, FailureProcessError, "", "explained by the backend"},
		{"network off", Outcome{ExitCode: 6, Stderr: "curl: (6) Could not resolve host: example.com\n"}, 6, FailureSandboxDenied, "", "network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := Result{Backend: "test", Unenforced: []string{"x"}}
			res := Classify(base, tt.o, never, InitMessages, custom, PolicyDenials(table, sb))
			if res.ExitCode != tt.code || res.FailureType != tt.ft || res.BlockedPath != tt.blocked {
				t.Fatalf("got exit %d %s blocked %q (%s); want %d %s %q", res.ExitCode, res.FailureType, res.BlockedPath, res.FailureDetail, tt.code, tt.ft, tt.blocked)
			}
			if strings.Contains(res.FailureDetail, "require_os_sandbox") || strings.Contains(res.FailureDetail, "forged") {
				t.Errorf("detail %q carries the command's own text", res.FailureDetail)
			}
			if !strings.Contains(res.FailureDetail, tt.detail) {
				t.Errorf("detail %q does not contain %q", res.FailureDetail, tt.detail)
			}
			if res.Backend != "test" || len(res.Unenforced) != 1 {
				t.Errorf("Classify lost the shared fields: %+v", res)
			}
		})
	}
}

// TestClassifyErrorsMatchSentinels: a set-up failure's cause is kept, so the
// detail carries it, and what spec refuses matches runner's sentinel.
func TestClassifyErrorsMatchSentinels(t *testing.T) {
	if !errors.Is(fmt.Errorf("x: %w", spec.ErrUnenforceable), ErrUnenforceable) {
		t.Fatal("runner.ErrUnenforceable does not match spec's")
	}
	res := SetupFailure(Result{}, errors.New("boom"))
	if res.FailureDetail != ErrSetup.Error()+": boom" {
		t.Errorf("detail = %q", res.FailureDetail)
	}
}

// TestParseInitStatus reads the status pipe's records and ignores the rest.
func TestParseInitStatus(t *testing.T) {
	st := ParseInitStatus("started -\nexec 127 cannot execute x: No such file or directory\nbogus\nexec 1 nope\n")
	if !st.Started || st.ExecCode != 127 || st.ExecMsg != "cannot execute x: No such file or directory" || st.Setup != "" {
		t.Errorf("got %+v", st)
	}
	if st := ParseInitStatus("setup no seccomp filter\n"); st.Started || st.Setup != "no seccomp filter" {
		t.Errorf("got %+v", st)
	}
}
