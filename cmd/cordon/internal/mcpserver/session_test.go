package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestShellUsesSession checks that the shell calls of one connection run
// in one warm sandbox (a file in its private /tmp is still there at the
// next call, which a cold run would not see), that each call still gets a
// fresh process (its strays are gone), and that the sandbox ends with the
// connection, leaving nothing in the state directory.
func TestShellUsesSession(t *testing.T) {
	testenv.RequireSandbox(t)
	f := newFixture(t, "")
	cfg, err := spec.Load(f.config)
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	r, err := runnerlinux.New(runner.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Sandbox: sandboxOf(t, cfg, cordon.WithRunner(r)), Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(cmd string) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": cmd}})
		if err != nil {
			t.Fatalf("protocol failure: %v", err)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if out := call("echo warm > /tmp/marker; sleep 300 & echo started"); !strings.Contains(out, "started") {
		t.Fatalf("first call:\n%s", out)
	}
	out := call("cat /tmp/marker; echo sleeping: $(cat /proc/[0-9]*/comm | grep -c sleep)")
	if !strings.Contains(out, "warm\n") {
		t.Fatalf("the second call did not run in the first call's sandbox:\n%s", out)
	}
	if !strings.Contains(out, "sleeping: 0\n") {
		t.Fatalf("the first call's background process survived it:\n%s", out)
	}
	if names, _ := os.ReadDir(filepath.Join(state, "runs")); len(names) != 1 {
		t.Fatalf("%d sandboxes for one connection, want 1", len(names))
	}
	cs.Close()
	_ = ss.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		names, _ := os.ReadDir(filepath.Join(state, "runs"))
		lc, _ := os.ReadDir(filepath.Join(state, "lc"))
		if len(names) == 0 && len(lc) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session outlived its connection: runs %v, lc %v", names, lc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
