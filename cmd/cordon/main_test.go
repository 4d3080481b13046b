package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// cordonBin is the cordon binary the CLI tests run: a real build of this
// command (with seccomp, static as make build links it, so `cordon exec`'s
// fast path runs before any C library code), since it re-executes itself
// as the container's init. It is built only when a test needs it, and
// cached across runs under a key of its sources (testenv.CordonBinary).
func cordonBin(t testing.TB) string {
	t.Helper()
	return testenv.CordonBinary(t, testenv.Seccomp)
}

// cliResult is the outcome of one cordon invocation.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the built binary in dir.
func runCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(cordonBin(t), args...)
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
