package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestRunWorkingDirectory: a run starts in the caller's directory when the
// sandbox shows it, in the workspace (with a note) when it does not, and in
// --cwd when given; a --cwd outside the sandbox is refused (exit 2) naming
// the flag, and nothing runs.
func TestRunWorkingDirectory(t *testing.T) {
	testenv.RequireSandbox(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n")
	writeFile(t, filepath.Join(ws, "proj", "src", "app.txt"), "app\n")
	src := filepath.Join(ws, "proj", "src")

	r := runCLI(t, src, "run", "--config", cfg, "--", "sh", "-c", "pwd; cat app.txt")
	if r.code != 0 || r.stdout != src+"\napp\n" {
		t.Fatalf("from %s: exit %d stdout %q stderr %q; want it to run there", src, r.code, r.stdout, r.stderr)
	}
	outside := t.TempDir()
	r = runCLI(t, outside, "run", "--config", cfg, "--", "pwd")
	if r.code != 0 || r.stdout != ws+"\n" || !strings.Contains(r.stderr, "is not in the sandbox; the command runs in "+ws) {
		t.Fatalf("from outside: exit %d stdout %q stderr %q; want the workspace and a note", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, outside, "run", "--config", cfg, "--cwd", "proj", "--", "pwd")
	if r.code != 0 || r.stdout != filepath.Join(ws, "proj")+"\n" {
		t.Fatalf("--cwd proj: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	marker := filepath.Join(ws, "ran")
	r = runCLI(t, src, "run", "--config", cfg, "--cwd", "/nonexistent-cordon", "--", "touch", marker)
	if r.code != exitConfig || !strings.Contains(r.stderr, "--cwd /nonexistent-cordon") || !strings.Contains(r.stderr, "fix:") {
		t.Fatalf("--cwd outside: exit %d stderr %q; want exit 2 naming --cwd and the fix", r.code, r.stderr)
	}
	if fileExists(marker) {
		t.Fatal("the command ran despite a refused --cwd")
	}
}
