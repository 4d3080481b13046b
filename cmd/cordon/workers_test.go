package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
)

// TestWorkerWideningRefused checks through the CLI that a worker asking for
// more than its parent, or a chain deeper than delegation.max_depth, is
// refused with exit 2 and a message naming the rule, that the command never
// starts, and that each refusal is in the audit log.
func TestWorkerWideningRefused(t *testing.T) {
	p := newProject(t)
	rows := []struct {
		name    string
		workers []string
		rule    string
		detail  string
	}{
		{"network on", []string{"net"}, "network", "the parent has none"},
		{"rw on a read-only zone", []string{"zonerw"}, "zone-mode", `asks rw on zone "data"`},
		{"unknown zone", []string{"unknown"}, "unknown-zone", "the parent's zones are: workspace (rw), data (ro)"},
		{"restrict outside", []string{"outside"}, "restrict-outside", "outside the parent's workspace"},
		{"larger limit", []string{"slow"}, "limit-timeout", "the parent allows at most 30s"},
		{"deeper than max_depth", []string{"src", "ro", "pure"}, "max-depth", "delegation.max_depth is 2"},
		{"widening at the second level", []string{"src", "net"}, "network", "the parent has none"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			marker := filepath.Join(p.ws, "ran-"+strings.ReplaceAll(r.name, " ", "-"))
			args := []string{"run", "--config", p.config}
			for _, w := range r.workers {
				args = append(args, "--worker", p.worker(w))
			}
			res := runCLI(t, p.base, append(args, "--", "touch", marker)...)
			if res.code != exitConfig {
				t.Fatalf("exit %d, want 2\nstderr: %s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, "rule "+r.rule+":") || !strings.Contains(res.stderr, r.detail) {
				t.Errorf("stderr does not name rule %s with %q:\n%s", r.rule, r.detail, res.stderr)
			}
			if fileExists(marker) {
				t.Errorf("the command ran despite the refusal")
			}
			// cordon mcp refuses the same chain before serving.
			margs := []string{"mcp", "--config", p.config}
			for _, w := range r.workers {
				margs = append(margs, "--worker", p.worker(w))
			}
			if m := runCLI(t, p.base, margs...); m.code != exitConfig || !strings.Contains(m.stderr, "rule "+r.rule+":") {
				t.Errorf("cordon mcp: exit %d, want 2 naming rule %s\n%s", m.code, r.rule, m.stderr)
			}
		})
	}

	recs := testenv.ReadAudit(t, p.audit)
	got := map[string]int{}
	for _, rec := range recs {
		if rec.Event != audit.EventDenial || rec.Source != audit.SourceDerive || rec.Worker == "" || rec.Detail == "" {
			t.Errorf("unexpected audit record %+v", rec)
			continue
		}
		got[rec.Via+" "+rec.Rule]++
	}
	for _, r := range rows {
		for _, via := range []string{audit.ViaCLI, audit.ViaMCP} {
			if got[via+" "+r.rule] == 0 {
				t.Errorf("no %s derive denial with rule %s in the audit log: %v", via, r.rule, got)
			}
		}
	}
}

// TestWorkerChainRun runs a two-level chain for real: the child sees only
// its subtree, read-only, and the report carries the lineage (--sandbox).
func TestWorkerChainRun(t *testing.T) {
	testenv.RequireSandbox(t)
	p := newProject(t)
	report := filepath.Join(p.base, "report.json")
	res := runCLI(t, p.base, "run", "--config", p.config, "--worker", p.worker("src"), "--worker", p.worker("ro"),
		"--report", report, "--sandbox", "--", "sh", "-c", "cat main.go; cat ../docs/brief.md; echo x > new.txt")
	if res.code == 0 {
		t.Fatalf("the write in a read-only child succeeded\nstderr: %s", res.stderr)
	}
	if res.stdout != "package main\n" {
		t.Errorf("stdout = %q, want only main.go (../docs is outside the child)", res.stdout)
	}
	if fileExists(filepath.Join(p.ws, "src", "new.txt")) {
		t.Errorf("new.txt was created in a read-only child")
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r runner.Result
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.FailureType != runner.FailureSandboxDenied || r.Sandbox == nil || strings.Join(r.Sandbox.Lineage, ">") != "src>ro" {
		t.Errorf("report = %s, want sandbox_denied with lineage src>ro", data)
	}
}
