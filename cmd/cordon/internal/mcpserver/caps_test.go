package mcpserver_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
	"github.com/cordon-run/cordon/spec"
)

// TestToolResultsCapped: a listing longer than MaxOutputChars is cut at a
// path and says how many were left out; a binary file is refused by read
// with a hint to use the shell, not returned raw.
func TestToolResultsCapped(t *testing.T) {
	ws := t.TempDir()
	long := strings.Repeat("x", 80)
	for i := 0; i < 1000; i++ {
		writeFile(t, filepath.Join(ws, fmt.Sprintf("%s-%04d.txt", long, i)), "")
	}
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "prog"), elf, 0o755); err != nil {
		t.Fatal(err)
	}
	cs := connectInMemory(t, sandboxOf(t, &spec.Config{Sandbox: spec.Sandbox{Root: ws, System: spec.System{Kind: spec.SystemHost}}}))
	text, isErr := call(t, cs, "list_files", map[string]any{"pattern": "*.txt"})
	if isErr || len(text) > mcpserver.MaxOutputChars+200 || !strings.Contains(text, "of 1000 paths") || !strings.Contains(text, "narrow the path or the pattern") {
		t.Fatalf("list_files of 1000 long paths: error %v, %d characters, ends %q", isErr, len(text), text[max(0, len(text)-200):])
	}
	text, isErr = call(t, cs, "read", map[string]any{"path": "prog"})
	if !isErr || !strings.Contains(text, "ELF") || !strings.Contains(text, "with a command") || strings.Contains(text, "\x7fELF") {
		t.Fatalf("read of an ELF file = %q (error %v); want a refusal with a hint", text[:min(len(text), 300)], isErr)
	}
}

// TestStdioServerVersion: `cordon mcp` announces cordon's version (the
// module version and VCS revision `cordon version` prints), not "dev".
func TestStdioServerVersion(t *testing.T) {
	f := newFixture(t, "")
	cs := startCordonMCP(t, f.ws, "--config", f.config)
	info := cs.InitializeResult().ServerInfo
	if info == nil || info.Name != mcpserver.Name || info.Version == "" || info.Version == "dev" {
		t.Fatalf("serverInfo = %+v; want cordon's version", info)
	}
	out, err := exec.Command(cordonBin(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "cordon "+info.Version+" (") {
		t.Fatalf("cordon version = %q (%v); serverInfo.version = %q", out, err, info.Version)
	}
}
