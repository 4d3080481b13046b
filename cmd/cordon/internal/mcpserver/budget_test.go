package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// maxPreamble is the most characters of server instructions and tool
// descriptions together that a client carries before its first call; the
// whole statement of the sandbox is the sandbox tool's result.
const maxPreamble = 3000

// TestMCPPreambleBudget measures, with the SDK's own client
// over `cordon mcp`'s stdio, what a client reads before its first call in
// a workspace with no config (the default profile, whose protect list
// alone is several kilobytes of paths): the instructions and every tool
// description together stay under maxPreamble characters, and the sandbox
// tool, one call away, states the whole sandbox.
func TestMCPPreambleBudget(t *testing.T) {
	ws := t.TempDir()
	cs := startCordonMCP(t, ws)
	total := len(cs.InitializeResult().Instructions)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		total += len(tool.Description)
	}
	t.Logf("instructions and %d tool descriptions (%s): %d characters", len(names), strings.Join(names, ","), total)
	if total >= maxPreamble {
		t.Errorf("instructions and tool descriptions take %d characters, want under %d", total, maxPreamble)
	}
	if !strings.Contains(cs.InitializeResult().Instructions, ws) || !strings.Contains(cs.InitializeResult().Instructions, "sandbox tool") {
		t.Errorf("the instructions do not name the workspace and the sandbox tool:\n%s", cs.InitializeResult().Instructions)
	}
	desc, isErr := call(t, cs, "sandbox", nil)
	for _, want := range []string{"- readable: ", "- writable: ", ws + " (except ", "- protected (readable, never writable): ", ws + "/.git/hooks", "- network: off"} {
		if isErr || !strings.Contains(desc, want) {
			t.Errorf("the sandbox tool's statement lacks %q:\n%s", want, desc)
		}
	}
}

// TestIntegrationShellListsIgnoredDenial: a shell call that tries to write
// a protected file, throws the error away and exits 0 has the refusal in
// its result (structured and text), from the broker's record; the file is
// unchanged. Root and (hack/test-rootless.sh) rootless.
func TestIntegrationShellListsIgnoredDenial(t *testing.T) {
	testenv.RequireSandbox(t)
	f := newFixture(t, "")
	cfg, err := spec.Load(f.config)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Sandbox: sandboxOf(t, cfg), Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	config := filepath.Join(f.ws, ".git", "config")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{
		"command": "echo '[core] pager = touch /tmp/x' >> .git/config 2>/dev/null; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(text, "exit code: 0") {
		t.Fatalf("the call failed:\n%s", text)
	}
	if !strings.Contains(text, "refused by the sandbox (1 calls):\n- ") || !strings.Contains(text, " "+config+": protect "+config) {
		t.Errorf("the text does not list the refused write:\n%s", text)
	}
	m, _ := res.StructuredContent.(map[string]any)
	ds, _ := m["denials"].([]any)
	if len(ds) != 1 || m["denial_count"] != float64(1) {
		t.Fatalf("structured denials %v (count %v), want the one refused write", m["denials"], m["denial_count"])
	}
	if d, _ := ds[0].(map[string]any); d["path"] != config || d["op"] == "" || !strings.HasPrefix(d["rule"].(string), "protect ") {
		t.Errorf("denial %v, want the write of %s by a protect rule", d, config)
	}
	if b, _ := os.ReadFile(config); string(b) != "[core]\n" {
		t.Fatalf("the protected file changed: %q", b)
	}
}
