package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cordonBin is the cordon binary the CLI tests run: a real build of this
// command (with seccomp), since it re-executes itself as the container's
// init. TestMain builds it once.
var cordonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cordon-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cordonBin = filepath.Join(dir, "cordon")
	// As make build links it: static, so `cordon exec`'s fast path runs
	// before any C library code (execfast_linux.c).
	out, err := exec.Command("go", "build", "-tags", "seccomp netgo osusergo",
		"-ldflags", "-linkmode external -extldflags -static", "-o", cordonBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/cordon: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// cliResult is the outcome of one cordon invocation.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the built binary in dir.
func runCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cordonBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("cordon %v: %v", args, err)
	}
	return r
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// project is a workspace with a config, a read-only data zone, a secret,
// a folder outside the workspace and worker files for each rule.
type project struct {
	base, ws, data, outside, config, audit, workers string
}

func (p project) worker(name string) string { return filepath.Join(p.workers, name+".worker.yaml") }

func newProject(t *testing.T) project {
	t.Helper()
	base := t.TempDir()
	p := project{
		base: base, ws: filepath.Join(base, "ws"), data: filepath.Join(base, "data"),
		outside: filepath.Join(base, "outside"), config: filepath.Join(base, "cordon.yaml"),
		audit: filepath.Join(base, "audit.jsonl"), workers: filepath.Join(base, "workers"),
	}
	writeFile(t, filepath.Join(p.ws, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(p.ws, "docs", "brief.md"), "the brief\n")
	writeFile(t, filepath.Join(p.ws, ".env"), "TOKEN=secret\n")
	writeFile(t, filepath.Join(p.data, "table.json"), "[]\n")
	writeFile(t, filepath.Join(p.data, "notes.txt"), "notes\n")
	writeFile(t, filepath.Join(p.outside, "secret.txt"), "outside\n")
	writeFile(t, p.config, `sandbox:
  root: ws
  mounts:
    - {source: data, name: data, readonly: true, suffixes: [.json]}
  deny: [.env]
  limits: {timeout: 30s}
delegation: {max_depth: 2}
audit: audit.jsonl
`)
	workers := map[string]string{
		"src":     "name: src\nsandbox:\n  restrict: src\n",
		"ro":      "name: ro\nsandbox:\n  readonly: true\n",
		"pure":    "name: pure\n",
		"net":     "name: net\nsandbox:\n  network: true\n",
		"zonerw":  "name: zonerw\nsandbox:\n  zones: [{name: data, mode: rw}]\n",
		"unknown": "name: unknown\nsandbox:\n  zones: [{name: secrets}]\n",
		"outside": "name: outside\nsandbox:\n  restrict: ../outside\n",
		"slow":    "name: slow\nsandbox:\n  limits: {timeout: 1h}\n",
	}
	for name, body := range workers {
		writeFile(t, p.worker(name), body)
	}
	return p
}
