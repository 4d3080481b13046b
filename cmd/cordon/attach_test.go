package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/testenv"
)

// TestAttachRefused checks --attach refusals through the CLI: each exits 2
// before the command starts, says what the parent can read, and is in the
// audit log. The parent is the sandbox before the chain's last level.
func TestAttachRefused(t *testing.T) {
	p := newProject(t)
	big := filepath.Join(p.ws, "big.bin")
	if err := os.WriteFile(big, make([]byte, 11<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var many []string
	for i := 0; i < 17; i++ {
		f := filepath.Join(p.ws, "many", strings.Repeat("m", i+1))
		writeFile(t, f, "x")
		many = append(many, f)
	}
	rows := []struct {
		name    string
		workers []string
		attach  []string
		rule    string
		want    []string
	}{
		{"outside the parent", []string{"pure"}, []string{filepath.Join(p.outside, "secret.txt")}, "outside",
			[]string{"outside the parent's sandbox", "the parent can read: ", p.ws + " (rw)"}},
		{"outside the parent at level two", []string{"src", "pure"}, []string{filepath.Join(p.ws, "docs", "brief.md")}, "outside",
			[]string{"outside the parent's sandbox", "the parent can read: ", p.ws + "/src (rw)"}},
		{"denied", []string{"pure"}, []string{".env"}, "deny", []string{"deny list", "the parent can read: "}},
		{"zone suffix", []string{"pure"}, []string{filepath.Join(p.data, "notes.txt")}, "suffix", []string{"allowed suffixes: .json"}},
		{"count", []string{"pure"}, many, "count", []string{"17 attachments given, but at most 16"}},
		{"total size", []string{"pure"}, []string{big}, "total-size", []string{"11534336 bytes in total, over the limit of 10485760 bytes"}},
		{"directory", []string{"pure"}, []string{"docs"}, "not-a-file", []string{"is a directory"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			marker := filepath.Join(p.base, "ran")
			args := []string{"run", "--config", p.config}
			for _, w := range r.workers {
				args = append(args, "--worker", p.worker(w))
			}
			for _, a := range r.attach {
				args = append(args, "--attach", a)
			}
			res := runCLI(t, p.ws, append(args, "--", "/usr/bin/touch", marker)...)
			if res.code != exitConfig {
				t.Fatalf("exit %d, want 2\nstderr: %s", res.code, res.stderr)
			}
			for _, w := range r.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			if fileExists(marker) {
				t.Errorf("the command ran despite the refusal")
			}
		})
	}
	got := map[string]bool{}
	for _, rec := range testenv.ReadAudit(t, p.audit) {
		if rec.Event == audit.EventDenial && rec.Source == audit.SourceAttach {
			got[rec.Rule] = true
		}
	}
	for _, r := range rows {
		if !got[r.rule] {
			t.Errorf("no attach denial with rule %s in the audit log (%v)", r.rule, got)
		}
	}
}

// TestAttachVisibleReadOnly runs children for real: an attached file is
// readable at the parent's path and cannot be written, and nothing else of
// the parent becomes visible.
func TestAttachVisibleReadOnly(t *testing.T) {
	testenv.RequireSandbox(t)
	p := newProject(t)
	brief := filepath.Join(p.ws, "docs", "brief.md")
	rows := []struct {
		name    string
		workers []string
	}{
		{"pure function", []string{"pure"}},
		{"restricted elsewhere", []string{"src"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			args := []string{"run", "--config", p.config}
			for _, w := range r.workers {
				args = append(args, "--worker", p.worker(w))
			}
			script := "cat " + brief + "; echo overwritten > " + brief + " && echo WROTE; ls " + filepath.Dir(brief) + "; cat " + filepath.Join(p.ws, "src", "main.go") + " >/dev/null 2>&1 && echo SRC"
			res := runCLI(t, p.ws, append(args, "--attach", "docs/brief.md", "--", "sh", "-c", script)...)
			if !strings.HasPrefix(res.stdout, "the brief\n") {
				t.Errorf("the child did not read the attachment: stdout %q stderr %q", res.stdout, res.stderr)
			}
			if strings.Contains(res.stdout, "WROTE") || !strings.Contains(res.stderr, "Read-only file system") {
				t.Errorf("the attachment was writable: stdout %q stderr %q", res.stdout, res.stderr)
			}
			if !strings.Contains(res.stdout, "\nbrief.md\n") {
				t.Errorf("ls of the attachment's folder = %q, want only brief.md", res.stdout)
			}
			wantSrc := r.workers[0] == "src"
			if got := strings.Contains(res.stdout, "SRC"); got != wantSrc {
				t.Errorf("src/main.go visible = %v, want %v", got, wantSrc)
			}
			if data, _ := os.ReadFile(brief); string(data) != "the brief\n" {
				t.Errorf("the attachment changed on the host: %q", data)
			}
		})
	}
}
