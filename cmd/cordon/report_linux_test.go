package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-run/cordon/internal/testenv"
)

// runGuarded is runCLI that kills cordon if it never returns, so a hang
// (the bug under test) fails the test instead of stalling the suite. It
// asserts no duration: the guard only turns a hang into a failure.
func runGuarded(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cordonBin(t), args...)
	cmd.Dir = dir
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("cordon %v never returned (killed); stderr: %s", args, se.String())
	}
	r := cliResult{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func readReportMap(t *testing.T, path string) map[string]any {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("report %s is not a regular file: %v %v", path, fi, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("report %q: %v", data, err)
	}
	return m
}

// TestRunReportNotRedirectedBySymlink: a command that plants a symbolic
// link at the report path cannot make cordon write the report elsewhere,
// and a link left by an earlier run is refused before anything runs (issue
// 9, item 1). The victim file is unchanged in both cases.
func TestRunReportNotRedirectedBySymlink(t *testing.T) {
	testenv.RequireSandbox(t)
	ws := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "keep")
	r := runGuarded(t, ws, "run", "--report", "report.json", "--", "sh", "-c", "rm -f report.json; ln -sf "+victim+" report.json")
	if r.code == 0 {
		t.Errorf("the command could replace the report path: %+v", r)
	}
	if got := readReportMap(t, filepath.Join(ws, "report.json")); got["exit_code"] != float64(r.code) {
		t.Errorf("report %v, cordon exited %d", got, r.code)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the victim was overwritten: %q", b)
	}
	// A link an earlier run left there: refused, nothing runs.
	planted := filepath.Join(ws, "planted.json")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(ws, "ran")
	r = runGuarded(t, ws, "run", "--report", "planted.json", "--", "touch", marker)
	if r.code != exitConfig || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("planted link: %+v", r)
	}
	if fileExists(marker) {
		t.Error("the command ran although its report could not be written")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the victim was overwritten: %q", b)
	}
}

// TestRunReportFIFONeverBlocks: a FIFO at the report path, made by the
// command or left by an earlier run, never blocks cordon (issue 9, item
// 2): it returns, and the report is written or the run refused.
func TestRunReportFIFONeverBlocks(t *testing.T) {
	testenv.RequireSandbox(t)
	ws := t.TempDir()
	r := runGuarded(t, ws, "run", "--report", "report.json", "--", "sh", "-c", "rm -f report.json; mkfifo report.json")
	if r.code == 0 {
		t.Errorf("the command could replace the report path: %+v", r)
	}
	readReportMap(t, filepath.Join(ws, "report.json"))
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runGuarded(t, ws, "run", "--report", "fifo.json", "--", "true")
	if r.code != exitConfig || !strings.Contains(r.stderr, "not a regular file") {
		t.Errorf("FIFO left by an earlier run: %+v", r)
	}
}

// TestRunAuditThroughSymlinkedFolderRefused: a folder of the --audit path
// that an earlier run replaced by a symbolic link is never followed: no
// log is created where it points (issue 9, item 3), and the command does
// not run (the audit log fails closed).
func TestRunAuditThroughSymlinkedFolderRefused(t *testing.T) {
	testenv.RequireSandbox(t)
	ws, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(ws, "logs")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(ws, "ran")
	r := runGuarded(t, ws, "run", "--audit", "logs/audit.jsonl", "--", "touch", marker)
	if r.code == 0 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("run: %+v", r)
	}
	if fileExists(filepath.Join(elsewhere, "audit.jsonl")) {
		t.Fatal("cordon created the log where the planted link points")
	}
	if fileExists(marker) {
		t.Error("the command ran without its audit record")
	}
}

// TestRunReportWrittenOnRefusal: every invocation that names a report
// writes one: a bad flag, a missing command or a bad config (exit 2)
// replaces the previous run's report (issue 9, item 10).
func TestRunReportWrittenOnRefusal(t *testing.T) {
	ws := t.TempDir()
	rep := filepath.Join(ws, "report.json")
	for _, args := range [][]string{
		{"run", "--report", rep, "--no-such-flag", "--", "true"},
		{"run", "--report=" + rep},
		{"run", "--report", rep, "--config", filepath.Join(ws, "missing.yaml"), "--", "true"},
		{"run", "--timeout", "bogus", "--report", rep, "--", "true"},
	} {
		writeFile(t, rep, `{"exit_code": 0, "failure_type": "none"}`)
		r := runGuarded(t, ws, args...)
		if r.code != exitConfig {
			t.Errorf("%v: exit %d, want %d", args, r.code, exitConfig)
		}
		got := readReportMap(t, rep)
		if got["exit_code"] != float64(exitConfig) || got["failure_type"] != "config_error" || got["failure_detail"] == "" {
			t.Errorf("%v: report %v", args, got)
		}
	}
}

// TestExecReportSafeAndAlwaysWritten: cordon exec (the C client) opens its
// --report as cordon run does: a planted link is refused and its target
// untouched (items 1 and 3), a FIFO never blocks it (item 2), and a refusal
// writes the report (item 10).
func TestExecReportSafeAndAlwaysWritten(t *testing.T) {
	ws := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "keep")
	if err := os.Symlink(victim, filepath.Join(ws, "planted.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(victim), filepath.Join(ws, "logs")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"planted.json", "logs/victim", "fifo.json"} {
		r := runGuarded(t, ws, "exec", "no-such-session", "--report", p, "--", "true")
		if r.code != exitConfig || !strings.Contains(r.stderr, "refused: --report") {
			t.Errorf("--report %s: %+v", p, r)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the victim was overwritten: %q", b)
	}
	rep := filepath.Join(ws, "report.json")
	for _, tc := range []struct {
		args []string
		code int
		ft   string
	}{
		{[]string{"exec", "no-such-session", "--report", rep, "--bogus", "--", "true"}, exitConfig, "config_error"},
		{[]string{"exec", "--report=" + rep, "bad/name", "--", "true"}, exitConfig, "config_error"},
		{[]string{"exec", "no-such-session", "--report", rep, "--", "true"}, exitSetup, "session_gone"},
	} {
		writeFile(t, rep, `{"exit_code": 0, "failure_type": "none"}`)
		r := runGuarded(t, ws, tc.args...)
		got := readReportMap(t, rep)
		if r.code != tc.code || got["exit_code"] != float64(tc.code) || got["failure_type"] != tc.ft {
			t.Errorf("%v: exit %d, report %v", tc.args, r.code, got)
		}
	}
}

// TestInitForceNeverThroughALink: cordon init --force replaces cordon.yaml
// as cordon writes every host file: a link an earlier run planted there is
// refused and its target untouched; a FIFO never blocks it.
func TestInitForceNeverThroughALink(t *testing.T) {
	ws := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	writeFile(t, victim, "keep")
	if err := os.Symlink(victim, filepath.Join(ws, "cordon.yaml")); err != nil {
		t.Fatal(err)
	}
	if r := runGuarded(t, ws, "init", "--force"); r.code == 0 {
		t.Errorf("init --force wrote through a link: %+v", r)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the victim was overwritten: %q", b)
	}
	ws = t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(ws, "cordon.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runGuarded(t, ws, "init", "--force"); r.code == 0 {
		t.Errorf("init --force wrote into a FIFO: %+v", r)
	}
}
