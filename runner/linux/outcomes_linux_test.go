package linux_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
)

// TestIntegrationSignalReported: a command killed by a signal is reported
// with the signal's name and 128+n; one that exits 128+n on its own is not
// said to have been killed.
func TestIntegrationSignalReported(t *testing.T) {
	sb := newSandbox(t)
	out := run(t, sb, "", sh("kill -SEGV $$")...)
	if out.res.ExitCode != 139 || out.res.Signal != "SIGSEGV" || out.res.FailureType != runner.FailureProcessError {
		t.Fatalf("kill -SEGV: got exit %d signal %q %s, want 139 SIGSEGV process_error", out.res.ExitCode, out.res.Signal, out.res.FailureType)
	}
	out = run(t, sb, "", sh("exit 139")...)
	if out.res.ExitCode != 139 || out.res.Signal != "" {
		t.Fatalf("exit 139: got exit %d signal %q, want 139 and no signal", out.res.ExitCode, out.res.Signal)
	}
}

// TestIntegrationPidsLimitTyped: a fork the pids controller refuses is
// typed pids_limit from the cgroup's counter, naming the limit; a command
// that prints the same words on its own under a limit is not.
func TestIntegrationPidsLimitTyped(t *testing.T) {
	if !isRoot() {
		t.Skip("rootless runs refuse a pids limit (TestIntegrationForkBombVsPids)")
	}
	sb := newSandbox(t)
	sb.Limits.Pids = 16
	sb.Limits.Timeout = 20 * time.Second
	out := run(t, sb, "", sh("for i in $(seq 64); do sleep 30 & done || exit 1; wait")...)
	if out.res.FailureType != runner.FailurePidsLimit || !strings.Contains(out.res.FailureDetail, "process limit of 16 (limits.pids)") {
		t.Fatalf("fork refused by pids.max: got %s %q, want pids_limit naming the limit", out.res.FailureType, out.res.FailureDetail)
	}
	out = run(t, sb, "", sh("echo 'sh: Cannot fork' >&2; exit 2")...)
	if out.res.FailureType != runner.FailureProcessError {
		t.Fatalf("a forged fork failure on stderr: got %s, want process_error", out.res.FailureType)
	}
}

// TestIntegrationFileSizeLimitTyped: a write past limits.file_size is
// typed file_size_limit from the wait status (SIGXFSZ), naming the limit.
func TestIntegrationFileSizeLimitTyped(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.FileSize = 1 << 20
	out := run(t, sb, "", "/bin/sh", "-c", "exec head -c 2097152 /dev/zero > big")
	if out.res.FailureType != runner.FailureFileSizeLimit || out.res.Signal != "SIGXFSZ" || out.res.ExitCode != 153 ||
		!strings.Contains(out.res.FailureDetail, "1MiB (limits.file_size)") {
		t.Fatalf("write past the file size limit: got exit %d signal %q %s %q, want 153 SIGXFSZ file_size_limit naming 1MiB",
			out.res.ExitCode, out.res.Signal, out.res.FailureType, out.res.FailureDetail)
	}
	if fi, err := os.Stat(filepath.Join(sb.Root, "big")); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("the file grew past the limit: %v %v", fi, err)
	}
	out = run(t, sb, "", "/bin/sh", "-c", "head -c 1000 /dev/zero > small")
	if out.res.FailureType != runner.FailureNone {
		t.Fatalf("a write under the limit: got %s", out.res.FailureType)
	}
}

// TestIntegrationOutputTruncated: when limits.output cuts a stream, the
// result says so and the stream carries a marker where it was cut; output
// under the limit is neither marked nor reported.
func TestIntegrationOutputTruncated(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Output = 1000
	out := run(t, sb, "", sh("head -c 5000 /dev/zero | tr '\\0' a; echo; head -c 3000 /dev/zero | tr '\\0' b >&2")...)
	if !out.res.OutputTruncated {
		t.Fatalf("output cut at 1000 bytes: output_truncated not set: %+v", out.res)
	}
	marker := fmt.Sprintf(runner.CutMarker, 1000)
	if !strings.HasSuffix(out.stdout, strings.Repeat("a", 1000)+marker) {
		t.Fatalf("stdout does not end in the first 1000 bytes and the marker: %q", out.stdout[max(0, len(out.stdout)-200):])
	}
	if !strings.Contains(out.stderr, strings.Repeat("b", 1000)+marker) || !strings.Contains(out.stderr, "stdout cut at 1000 bytes") {
		t.Fatalf("stderr lacks the marker or the note: %q", out.stderr[max(0, len(out.stderr)-300):])
	}
	out = run(t, sb, "", sh("echo small")...)
	if out.res.OutputTruncated || out.stdout != "small\n" {
		t.Fatalf("output under the limit: truncated=%v stdout=%q", out.res.OutputTruncated, out.stdout)
	}
}

// TestIntegrationWriteOutsideEveryMount: a write to a path no mount covers
// is reported as a write, with what IS writable, not as a read; nothing is
// created on the host.
func TestIntegrationWriteOutsideEveryMount(t *testing.T) {
	sb := newSandbox(t)
	for _, tc := range []struct{ script, path string }{
		{"echo x > /srv/cordon-outcomes-x", "/srv/cordon-outcomes-x"},
		{"mkdir /opt/cordon-outcomes-d", "/opt/cordon-outcomes-d"},
	} {
		if _, err := os.Stat(filepath.Dir(tc.path)); err != nil {
			t.Fatalf("this test needs %s on the host: %v", filepath.Dir(tc.path), err)
		}
		out := run(t, sb, "", sh(tc.script)...)
		want := "cannot write " + tc.path + ": outside the sandbox; writable: " + sb.Root
		if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != tc.path || !strings.HasPrefix(out.res.FailureDetail, want) {
			t.Fatalf("%s: got %s %q %q, want sandbox_denied at %s starting %q", tc.script, out.res.FailureType, out.res.BlockedPath, out.res.FailureDetail, tc.path, want)
		}
		mustNotExist(t, tc.path)
	}
}

// TestIntegrationSessionLimitsTyped: in a warm session, an exec that hits
// the session's pids limit is pids_limit and one killed by SIGXFSZ is
// file_size_limit, each naming the limit; the session goes on.
func TestIntegrationSessionLimitsTyped(t *testing.T) {
	if !isRoot() {
		t.Skip("rootless runs refuse a pids limit (TestIntegrationForkBombVsPids)")
	}
	sb := newSandbox(t)
	sb.Limits.Pids = 16
	sb.Limits.FileSize = 1 << 20
	s := startSession(t, sb)
	out := execIn(t, s, runner.ExecRequest{Args: sh("for i in $(seq 64); do sleep 30 & done || exit 1; wait"), Timeout: 20 * time.Second})
	if out.res.FailureType != runner.FailurePidsLimit || !strings.Contains(out.res.FailureDetail, "limit of 16") {
		t.Fatalf("fork refused by pids.max: got %s %q", out.res.FailureType, out.res.FailureDetail)
	}
	out = execIn(t, s, runner.ExecRequest{Args: sh("exec head -c 2097152 /dev/zero > big")})
	if out.res.FailureType != runner.FailureFileSizeLimit || out.res.Signal != "SIGXFSZ" {
		t.Fatalf("write past the file size limit: got %s %q signal %q", out.res.FailureType, out.res.FailureDetail, out.res.Signal)
	}
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.FailureType != runner.FailureNone {
		t.Fatalf("after the limits: %+v", out.res)
	}
}

// TestIntegrationDoctorSeal: doctor claims the overlay seal of
// /proc/self/exe only as root; rootless, libcontainer falls back to the
// memfd copy and doctor says so. Seccomp is marked required.
func TestIntegrationDoctorSeal(t *testing.T) {
	caps := runnerlinux.Doctor()
	var seal, sec *runner.Capability
	for i := range caps {
		switch caps[i].Name {
		case "sealed /proc/self/exe":
			seal = &caps[i]
		case "seccomp":
			sec = &caps[i]
		}
	}
	if seal == nil || sec == nil || !sec.Required {
		t.Fatalf("doctor rows: %+v", caps)
	}
	if !isRoot() && strings.Contains(seal.Detail, "overlay of the binary") {
		t.Fatalf("rootless doctor claims the overlay seal: %q", seal.Detail)
	}
	if !isRoot() && !strings.Contains(seal.Detail, "memfd") {
		t.Fatalf("rootless doctor does not say memfd: %q", seal.Detail)
	}
}
