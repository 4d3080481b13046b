package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestCheckAgreesWithBroker: `cordon check` and the kernel (through the
// broker) give one answer for what the broker decides beyond writes of
// contents: a protected hook may be read but its mode not changed and no
// socket bound under its name; a denied name is unreadable with
// strict_deny; an ordinary directory takes a socket and a chmod.
func TestCheckAgreesWithBroker(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	ws := t.TempDir()
	hook := filepath.Join(ws, "sub/.git/hooks/pre-commit")
	writeFile(t, hook, "#!/bin/sh\n")
	writeFile(t, filepath.Join(ws, "sub/.env"), "TOKEN=x\n")
	writeFile(t, filepath.Join(ws, "run/s.sh"), "#!/bin/sh\n")
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n  protect: [\"**/.git/hooks\"]\n  protect_defaults: false\n  deny: [\"**/.env\"]\n  strict_deny: true\n")
	for _, tc := range []struct {
		op, path string
		code     int
	}{
		{"read", hook, exitOK},
		{"write", hook, exitDenied},
		{"write", filepath.Join(ws, "sub/.git/hooks/x.sock"), exitDenied},
		{"read", filepath.Join(ws, "sub/.env"), exitDenied},
		{"write", filepath.Join(ws, "run/s.sock"), exitOK},
		{"write", filepath.Join(ws, "run/s.sh"), exitOK},
	} {
		if r := runCLI(t, ws, "check", "--config", cfg, tc.op, tc.path); r.code != tc.code {
			t.Errorf("check %s %s: exit %d %q; want %d", tc.op, tc.path, r.code, r.stdout, tc.code)
		}
	}
	testenv.RequireSandbox(t)
	bind := func(p string) string {
		return "python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' " + p
	}
	for _, script := range []string{"cat " + hook + " >/dev/null && chmod +x " + hook, bind("sub/.git/hooks/x.sock"), "cat sub/.env"} {
		r := runCLI(t, ws, "run", "--config", cfg, "--", "sh", "-c", script)
		if r.code == 0 || !strings.Contains(r.stderr, "sandbox_denied") {
			t.Errorf("%s: the kernel allowed what check refused: exit %d %q", script, r.code, r.stderr)
		}
	}
	if fi, err := os.Stat(hook); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the hook's mode changed: %v %v", fi, err)
	}
	if fileExists(filepath.Join(ws, "sub/.git/hooks/x.sock")) {
		t.Fatal("a socket was bound under the protected name")
	}
	r := runCLI(t, ws, "run", "--config", cfg, "--", "sh", "-c", "chmod +x run/s.sh && "+bind("run/s.sock"))
	if r.code != 0 || !fileExists(filepath.Join(ws, "run/s.sock")) {
		t.Fatalf("the kernel refused what check allowed: exit %d %q", r.code, r.stderr)
	}
}
