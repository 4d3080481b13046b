package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestCheckAgreesWithToolsAndKernel: `cordon check` gives one answer for a
// command and the file tools. A path in the sandbox's own /tmp, /proc or
// /dev is usable by commands (exit 3: not by the tools), as a run shows; a
// file the read tool refuses by suffix or size is not "allowed" (exit 3);
// a path outside the sandbox is refused for both (exit 1), and so is a
// name the repository-shape rules refuse, decided on the tree as it is.
func TestCheckAgreesWithToolsAndKernel(t *testing.T) {
	ws := t.TempDir()
	data := filepath.Join(ws, "data")
	writeFile(t, filepath.Join(data, "ok.txt"), "small\n")
	writeFile(t, filepath.Join(data, "big.txt"), strings.Repeat("x", 4096))
	writeFile(t, filepath.Join(data, "bin.so"), "x")
	// A directory git takes for a repository: check answers with the
	// broker's and Write's rules (package decide), on the tree as it is.
	writeFile(t, filepath.Join(ws, "r", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(ws, "r", "objects", "x"), "")
	writeFile(t, filepath.Join(ws, "q", "objects", "x"), "")
	writeFile(t, filepath.Join(ws, "q", "refs", "x"), "")
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n  mounts:\n    - source: data\n      target: "+data+"\n      readonly: true\n      suffixes: [.txt]\n      max_file_bytes: 1KiB\n")
	for _, tc := range []struct {
		op, path string
		code     int
		want     string
	}{
		{"read", "/tmp/x", exitCommandsOnly, "allowed for commands: read /tmp/x (the sandbox's own /tmp)"},
		{"write", "/tmp/x", exitCommandsOnly, "allowed for commands: write /tmp/x"},
		{"read", "/proc/self/status", exitCommandsOnly, "allowed for commands: read /proc/self/status"},
		{"write", "/dev/null", exitCommandsOnly, "allowed for commands: write /dev/null"},
		{"read", "/proc/kcore", exitDenied, "masked"},
		{"read", "/dev/sda", exitDenied, "no such device"},
		{"read", filepath.Join(data, "ok.txt"), exitOK, "allowed: read"},
		{"read", filepath.Join(data, "bin.so"), exitCommandsOnly, "refused by the file tools: cannot read " + filepath.Join(data, "bin.so") + ": file suffix not allowed"},
		{"read", filepath.Join(data, "big.txt"), exitCommandsOnly, "4096 bytes is over the limit of 1024 bytes"},
		{"read", "/root/x", exitDenied, "cannot read /root/x: outside the sandbox"},
		{"write", filepath.Join(ws, "r", "commondir"), exitDenied, "a commondir beside HEAD"},
		{"write", filepath.Join(ws, "q", "HEAD"), exitOK, "allowed: write"},
	} {
		r := runCLI(t, ws, "check", "--config", cfg, tc.op, tc.path)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.want) {
			t.Errorf("check %s %s: exit %d %q; want %d containing %q", tc.op, tc.path, r.code, r.stdout, tc.code, tc.want)
		}
	}
	// The kernel agrees: a command uses what check said commands may.
	testenv.RequireSandbox(t)
	r := runCLI(t, ws, "run", "--config", cfg, "--", "sh", "-c",
		"echo x > /tmp/x && cat /tmp/x /proc/self/status >/dev/null && echo ok > /dev/null && cat "+filepath.Join(data, "bin.so")+" "+filepath.Join(data, "big.txt")+" >/dev/null && echo USED")
	if r.code != 0 || !strings.Contains(r.stdout, "USED") {
		t.Fatalf("a command could not use what check allowed commands: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestExplainSaysHowAllowListsAreEnforced: explain reads the runner's
// table: where the guard runs it says how the allow list is enforced,
// elsewhere it says why it is refused.
func TestExplainSaysHowAllowListsAreEnforced(t *testing.T) {
	ws := t.TempDir()
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n  network: {allow: [\"github.com:443\", \"*.pypi.org\"]}\n")
	r := runCLI(t, ws, "explain", "--config", cfg)
	want := "network: allow list enforced by cordon's own network stack"
	if f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0); err == nil {
		f.Close()
	} else {
		want = "refused: network allow list (github.com:443, *.pypi.org): /dev/net/tun cannot be opened"
	}
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("explain: exit %d %q; want %q", r.code, r.stdout, want)
	}
}
