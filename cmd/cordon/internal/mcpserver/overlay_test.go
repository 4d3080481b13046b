package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/mcpserver"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationOverlayFileTools: with the overlay named by the config
// (workspace_mode: overlay) or by the server's options (cordon mcp
// --overlay), the file tools and the shell see one tree, the overlay's: a
// file written by the write tool is what the shell reads, a file the shell
// writes is what the read tool and list_files see, and nothing of it
// reaches the host workspace (a hash listing before and after); cordon
// diff shows the write. A protect path is still refused at write time,
// and neither the overlay nor the host holds the refused content.
func TestIntegrationOverlayFileTools(t *testing.T) {
	testenv.RequireSandbox(t)
	tests := []struct {
		name, mode, option, overlay string
	}{
		{"config", "  workspace_mode: overlay\n", "", "ws"},
		{"option", "", "agent1", "agent1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CORDON_OVERLAY_DIR", filepath.Join(t.TempDir(), "overlays"))
			f := newFixture(t, "")
			data, err := os.ReadFile(f.config)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, f.config, strings.Replace(string(data), "sandbox:\n", "sandbox:\n"+tt.mode, 1))
			cfg, err := spec.Load(f.config)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { discardAll(t) })
			before := treeHash(t, f.ws)
			srv, err := mcpserver.New(mcpserver.Options{Sandbox: sandboxOf(t, cfg), Shell: true, Overlay: tt.option})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, srv)

			if out, isErr := call(t, cs, "write", map[string]any{"path": "notes/new.txt", "content": "from the tool\n"}); isErr {
				t.Fatalf("write: %s", out)
			}
			if out, _ := call(t, cs, "shell", map[string]any{"command": "cat notes/new.txt && echo from the shell > sh.txt"}); !strings.Contains(out, "from the tool") {
				t.Errorf("the shell does not see the tool's write:\n%s", out)
			}
			if out, isErr := call(t, cs, "read", map[string]any{"path": "sh.txt"}); isErr || !strings.Contains(out, "from the shell") {
				t.Errorf("read does not see the shell's write: %v %s", isErr, out)
			}
			if out, _ := call(t, cs, "list_files", map[string]any{"pattern": "**/*.txt"}); !strings.Contains(out, "notes/new.txt") || !strings.Contains(out, "sh.txt") {
				t.Errorf("list_files:\n%s", out)
			}
			// protect holds at write time, in the overlay too.
			out, isErr := call(t, cs, "write", map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ncurl evil\n"})
			if !isErr || !strings.Contains(out, "protect") {
				t.Errorf("write of a protected hook: error %v: %s", isErr, out)
			}
			if out, _ := call(t, cs, "shell", map[string]any{"command": "cat .git/hooks/pre-commit"}); strings.Contains(out, "evil") || !strings.Contains(out, "exit 0") {
				t.Errorf("the refused hook is in the overlay:\n%s", out)
			}
			if got := diffTrees(before, treeHash(t, f.ws)); len(got) > 0 {
				t.Errorf("the host workspace changed: %v", got)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			// What cordon diff prints.
			st, err := cordon.OverlayStore()
			if err != nil {
				t.Fatal(err)
			}
			o, err := st.Get(tt.overlay)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := o.Changes()
			if err != nil {
				t.Fatal(err)
			}
			var patch strings.Builder
			err = o.WriteDiff(&patch, changes, true)
			if err != nil || !strings.Contains(patch.String(), "+++ b/notes/new.txt\n@@ -0,0 +1 @@\n+from the tool\n") ||
				!strings.Contains(patch.String(), "b/sh.txt") || strings.Contains(patch.String(), "pre-commit") {
				t.Errorf("cordon diff %s: %v\n%s", tt.overlay, err, patch.String())
			}
		})
	}
}

func connect(t *testing.T, srv *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.MCP().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// discardAll removes every overlay of the test's store: overlayfs leaves
// a work directory of mode 0 that the temporary directory's removal
// cannot enter.
func discardAll(t *testing.T) {
	st, err := cordon.OverlayStore()
	if err != nil {
		return
	}
	list, _ := st.List()
	for _, o := range list {
		if err := st.Discard(o.Name); err != nil {
			t.Errorf("discard %s: %v", o.Name, err)
		}
	}
}
