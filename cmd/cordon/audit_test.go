package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// TestAuditRecordsRuns checks the audit log after an allowed run, a run the
// sandbox denied and a refused derivation, in the config's log and in the
// --audit file alike.
func TestAuditRecordsRuns(t *testing.T) {
	testenv.RequireSandbox(t)
	p := newProject(t)
	extra := filepath.Join(p.base, "extra.jsonl")
	cfg, err := spec.Load(p.config)
	if err != nil {
		t.Fatal(err)
	}
	// No git identity to carry (it would add its file's mount to the
	// effective sandbox, which this digest does not build).
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// The effective sandbox also keeps cordon's control files out of reach,
	// and has the caller's caches, toolchains and CA files, as every
	// run's does.
	eff, err := cordon.NewProject(cfg, cordon.WithAuditFile(extra)).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	digest, err := spec.SandboxDigest(eff.Spec())
	if err != nil {
		t.Fatal(err)
	}

	if r := runCLI(t, p.ws, "run", "--config", p.config, "--audit", extra, "--", "true"); r.code != 0 {
		t.Fatalf("allowed run: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, p.ws, "run", "--config", p.config, "--audit", extra, "--", "sh", "-c", "echo x > /usr/cordon-audit-test"); r.code == 0 {
		t.Fatalf("write to /usr succeeded")
	}
	if r := runCLI(t, p.ws, "run", "--config", p.config, "--audit", extra, "--worker", p.worker("net"), "--", "true"); r.code != exitConfig {
		t.Fatalf("refused derivation: exit %d, want 2", r.code)
	}

	for _, path := range []string{p.audit, extra} {
		recs := testenv.ReadAudit(t, path)
		var got []string
		for _, r := range recs {
			got = append(got, r.Event+"/"+r.Source)
			if r.Via != audit.ViaCLI || r.PID == 0 || r.Time.IsZero() {
				t.Errorf("%s: record without via, pid or time: %+v", path, r)
			}
		}
		want := "start/,run/,start/,run/,denial/runner,denial/derive"
		if strings.Join(got, ",") != want {
			t.Fatalf("%s: records %v, want %s", path, got, want)
		}
		okStart, okRun, deniedRun, runnerDenial, derive := recs[0], recs[1], recs[3], recs[4], recs[5]
		if okStart.Sandbox != digest || okRun.Sandbox != digest || strings.Join(okRun.Command, " ") != "true" || okRun.RunID != okStart.RunID {
			t.Errorf("allowed run records %+v %+v: want digest %s, command true, one run id", okStart, okRun, digest)
		}
		if okRun.Result == nil || okRun.Result.ExitCode != 0 || okRun.Result.FailureType != "none" || okRun.DurationMS == nil {
			t.Errorf("allowed run result %+v", okRun)
		}
		if deniedRun.Result == nil || deniedRun.Result.FailureType != "sandbox_denied" || deniedRun.Result.BlockedPath != "/usr/cordon-audit-test" {
			t.Errorf("denied run result %+v", deniedRun.Result)
		}
		if runnerDenial.Path != "/usr/cordon-audit-test" || runnerDenial.Rule != "readonly" || runnerDenial.RunID != deniedRun.RunID {
			t.Errorf("runner denial %+v, want /usr/cordon-audit-test by rule readonly", runnerDenial)
		}
		if derive.Worker != "net" || derive.Rule != spec.RuleNetwork || !strings.Contains(derive.Detail, "rule network") || derive.Sandbox != digest {
			t.Errorf("derive denial %+v", derive)
		}
	}
}

// TestAuditFailsClosed checks that a run whose audit log cannot be written
// exits 125 and never starts its command.
func TestAuditFailsClosed(t *testing.T) {
	p := newProject(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(p.base, "bad-audit.yaml")
	writeFile(t, badConfig, "sandbox:\n  root: ws\naudit: no-such-dir/audit.jsonl\n")
	rows := []struct {
		name string
		args []string
	}{
		{"--audit in a missing folder", []string{"--config", p.config, "--audit", filepath.Join(dir, "missing", "a.jsonl")}},
		{"--audit is a directory", []string{"--config", p.config, "--audit", dir}},
		{"--audit is a symbolic link", []string{"--config", p.config, "--audit", filepath.Join(dir, "link.jsonl")}},
		{"config audit in a missing folder", []string{"--config", badConfig}},
	}
	for i, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			marker := filepath.Join(p.base, fmt.Sprintf("ran-%d", i))
			args := append(append([]string{"run"}, r.args...), "--", "/usr/bin/touch", marker)
			res := runCLI(t, p.ws, args...)
			if res.code != exitSetup {
				t.Fatalf("exit %d, want 125\nstderr: %s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, "the command was not started") || !strings.Contains(res.stderr, "audit log") {
				t.Errorf("stderr = %q, want it to say the audit log stopped the run", res.stderr)
			}
			if fileExists(marker) {
				t.Errorf("the command ran although its start could not be recorded")
			}
		})
	}
	if fileExists(filepath.Join(dir, "target")) {
		t.Errorf("the audit log was written through a symbolic link")
	}
}

// TestAuditConcurrentProcesses runs many cordon processes against one log
// at once; every line parses and nothing is lost.
func TestAuditConcurrentProcesses(t *testing.T) {
	p := newProject(t)
	const refused = 12
	allowed := 0
	if testenv.CanSandbox() {
		allowed = 4
	}
	var wg sync.WaitGroup
	codes := make(chan int, refused+allowed)
	for i := 0; i < refused+allowed; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			args := []string{"run", "--config", p.config, "--worker", p.worker("src"), "--worker", p.worker("net"), "--", "true"}
			if i >= refused {
				args = []string{"run", "--config", p.config, "--", "sh", "-c", "echo " + strings.Repeat("x", 5000) + " >/dev/null"}
			}
			codes <- runCLI(t, p.ws, args...).code
		}(i)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 0 && c != exitConfig {
			t.Errorf("a cordon process exited %d", c)
		}
	}
	counts := map[string]int{}
	for _, r := range testenv.ReadAudit(t, p.audit) {
		counts[r.Event+"/"+r.Source]++
	}
	want := map[string]int{"denial/derive": refused}
	if allowed > 0 {
		want["start/"], want["run/"] = allowed, allowed
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("records %v, want %v", counts, want)
	}
}

// TestAuditBestEffort: with `audit_required: false` a log that cannot be
// written is reported on stderr and the command still runs.
func TestAuditBestEffort(t *testing.T) {
	p := newProject(t)
	cfg := filepath.Join(p.base, "best-effort.yaml")
	writeFile(t, cfg, "sandbox:\n  root: ws\naudit: no-such-dir/audit.jsonl\naudit_required: false\n")
	res := runCLI(t, p.ws, "run", "--config", cfg, "--", "true")
	if res.code != 0 {
		t.Fatalf("exit %d, want 0 (best-effort audit)\nstderr: %s", res.code, res.stderr)
	}
	if !strings.Contains(res.stderr, "audit record not written") {
		t.Errorf("stderr = %q, want a warning about the audit log", res.stderr)
	}
}
