package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheCommand: cache ls lists each cache with its size and folder
// (CORDON_CACHE_DIR), clear NAME removes that one, clear of an unknown
// name is refused (exit 2) with the names that exist, and --help is on
// stdout with exit 0.
func TestCacheCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "caches")
	t.Setenv("CORDON_CACHE_DIR", dir)
	writeFile(t, filepath.Join(dir, "go", "build", "x"), "12345")
	writeFile(t, filepath.Join(dir, "npm", "y"), "1")
	r := runCLI(t, t.TempDir(), "cache", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, filepath.Join(dir, "go")) || !strings.Contains(r.stdout, " 5B ") {
		t.Fatalf("cache ls: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, t.TempDir(), "cache", "clear", "maven"); r.code != 2 || !strings.Contains(r.stderr, "go npm pip") {
		t.Errorf("clear maven: %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, t.TempDir(), "cache", "clear", "go"); r.code != 0 || fileExists(filepath.Join(dir, "go")) || !fileExists(filepath.Join(dir, "npm", "y")) {
		t.Errorf("clear go: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, t.TempDir(), "cache", "ls", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"name": "npm"`) || strings.Contains(r.stdout, `"name": "go"`) {
		t.Errorf("ls --json: %d %q", r.code, r.stdout)
	}
	if r := runCLI(t, t.TempDir(), "cache", "--help"); r.code != 0 || !strings.Contains(r.stdout, "usage: cordon cache") {
		t.Errorf("--help: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
