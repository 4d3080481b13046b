package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseWorker(t *testing.T) {
	fixtureHome(t)
	tests := []struct {
		name string
		yml  string
		want *Worker
	}{
		{"pure function", "description: x\ninstructions: do it\n", &Worker{Name: "def"}},
		{"null sandbox is a pure function", "sandbox:\n", &Worker{Name: "def"}},
		{"empty sandbox inherits", "sandbox: {}", &Worker{Name: "def", Sandbox: &WorkerRequest{}}},
		{"name key wins", "name: fmt-2.x", &Worker{Name: "fmt-2.x"}},
		{"harness keys and later documents are ignored", "model: m\ntools: [a, {b: c}]\n---\nnot: [yaml", &Worker{Name: "def"}},
		{"every key", `
sandbox:
  restrict: src/../lib/
  readonly: true
  zones: [{name: workspace, mode: ro}, {name: cache}]
  network: {allow: [PyPI.org]}
  limits: {timeout: 5s, memory: 8MiB, pids: 3, file_size: 1k, cpus: 0.25, output: 2k}`,
			&Worker{Name: "def", Sandbox: &WorkerRequest{
				Restrict: "lib", Readonly: true,
				Zones:   []ZoneRequest{{Name: "workspace", Mode: ModeRO}, {Name: "cache"}},
				Network: &Network{Enabled: true, Allow: []string{"pypi.org"}},
				Limits:  Limits{Timeout: 5 * time.Second, Memory: 8 << 20, Pids: 3, FileSize: 1 << 10, CPUs: 0.25, Output: 2 << 10},
			}}},
		{"network false is explicit off", "sandbox: {network: false}", &Worker{Name: "def", Sandbox: &WorkerRequest{Network: &Network{}}}},
		{"zones empty list", "sandbox: {zones: []}", &Worker{Name: "def", Sandbox: &WorkerRequest{Zones: []ZoneRequest{}}}},
		{"absolute restrict", "sandbox: {restrict: /srv/x/}", &Worker{Name: "def", Sandbox: &WorkerRequest{Restrict: "/srv/x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := ParseWorker([]byte(tt.yml), "def", "w.worker.yaml")
			if err != nil {
				t.Fatalf("ParseWorker: %v", err)
			}
			tt.want.Source = "w.worker.yaml"
			eq(t, w, tt.want)
		})
	}
}

func TestParseWorkerRejects(t *testing.T) {
	tests := []struct {
		name, yml, field, want string
		line                   int
	}{
		{"unknown sandbox key", "sandbox:\n  restrict: src\n  root: /\n", "sandbox.root", "unknown key", 3},
		{"bad name", "name: ../evil", "name", "not a valid worker name", 1},
		{"zone mode", "sandbox:\n  zones:\n    - {name: cache, mode: write}", "sandbox.zones[0].mode", `"write" is not a zone mode`, 3},
		{"zone without name", "sandbox: {zones: [{mode: ro}]}", "sandbox.zones[0].name", "is required", 1},
		{"zone twice", "sandbox: {zones: [{name: a}, {name: a, mode: ro}]}", "sandbox.zones[1].name", "also asked for", 1},
		{"zone as a string", "sandbox: {zones: [cache]}", "sandbox.zones[0]", "must be a mapping", 1},
		{"rw with readonly", "sandbox:\n  readonly: true\n  zones: [{name: a, mode: rw}]", "sandbox.zones[0].mode", "contradicts readonly", 3},
		{"restrict empty", `sandbox: {restrict: ""}`, "sandbox.restrict", "is empty", 1},
		{"restrict NUL", `sandbox: {restrict: "a\0"}`, "sandbox.restrict", "NUL", 1},
		{"network string", "sandbox: {network: all}", "sandbox.network", "must be true, false", 1},
		{"allow bad", "sandbox: {network: {allow: [a.com:99999]}}", "sandbox.network.allow[0]", "port", 1},
		{"limit zero", "sandbox:\n  limits:\n    memory: 0", "sandbox.limits.memory", "above zero", 3},
		{"sandbox is a list", "sandbox: [a]", "sandbox", "must be a mapping", 1},
		{"syntax", "sandbox: {", "yaml", "", 1},
		{"alias", "x: &a {restrict: src}\nsandbox: *a", "sandbox", "aliases", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := ParseWorker([]byte(tt.yml), "def", "w.worker.yaml")
			if err == nil {
				t.Fatalf("ParseWorker succeeded: %+v", w)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "invalid worker w.worker.yaml") {
				t.Errorf("err = %v", err)
			}
			for _, p := range problems(err) {
				if p.Field == tt.field && strings.Contains(p.Problem, tt.want) {
					if p.Line != tt.line {
						t.Errorf("line = %d, want %d", p.Line, tt.line)
					}
					return
				}
			}
			t.Errorf("no problem on %s containing %q; got:\n%v", tt.field, tt.want, err)
		})
	}
}

func TestLoadWorkerName(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ file, want string }{
		{"fmt.worker.yaml", "fmt"},
		{"lint.worker.yml", "lint"},
		{"plain.yaml", "plain"},
		{"noext", "noext"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := filepath.Join(dir, tt.file)
			if err := os.WriteFile(p, []byte("description: d\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			w, err := LoadWorker(p)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, w.Name, tt.want)
			eq(t, w.Source, p)
		})
	}
	_, err := LoadWorker(filepath.Join(dir, "missing.worker.yaml"))
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// A base name that is not a valid worker name needs a name key.
	bad := filepath.Join(dir, "my worker.worker.yaml")
	if err := os.WriteFile(bad, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWorker(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("invalid default name accepted: %v", err)
	}
}
