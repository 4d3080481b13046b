package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runnerlinux "github.com/cordon-run/cordon/runner/linux"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestMain carries libcontainer's init hook: the in-process shell tests
// re-execute this test binary as the container's init.
func TestMain(m *testing.M) {
	runnerlinux.Init()
	os.Exit(m.Run())
}

// cordonBin is a build of ./cmd/cordon (with seccomp), cached across runs
// under a key of its sources. The binary re-executes itself as the
// container init, so it must be a real build of the command.
func cordonBin(t *testing.T) string {
	t.Helper()
	return testenv.CordonBinary(t, testenv.Seccomp)
}

// treeHash maps each path under dir to a digest of its type, mode and
// content (or link target).
func treeHash(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h := sha256.New()
		h.Write([]byte(fi.Mode().String()))
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Write([]byte(l))
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		out[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", dir, err)
	}
	return out
}

// diffTrees returns the paths added, changed or removed between a and b.
func diffTrees(a, b map[string]string) []string {
	var out []string
	for p, h := range b {
		if a[p] != h {
			out = append(out, p)
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, p+" (removed)")
		}
	}
	return out
}

// call calls a tool and returns its text and whether it was a tool error.
// A protocol failure fails the test: refusals must be tool errors.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol failure (want a tool result): %v", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
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

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// fixture is a project: a workspace with git metadata, a secret, symbolic
// links out, a data zone with suffix and size rules, and a config.
type fixture struct {
	base, ws, outside, data, config, audit string
}

func newFixture(t *testing.T, extra string) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{
		base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside"),
		data: filepath.Join(base, "data"), config: filepath.Join(base, "cordon.yaml"),
		audit: filepath.Join(base, "audit.jsonl"),
	}
	writeFile(t, filepath.Join(f.ws, "README.md"), "# project\n")
	writeFile(t, filepath.Join(f.ws, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(f.ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexit 0\n")
	writeFile(t, filepath.Join(f.ws, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(f.ws, ".env"), "TOKEN=secret\n")
	writeFile(t, filepath.Join(f.outside, "secret.txt"), "outside\n")
	writeFile(t, filepath.Join(f.data, "ok.json"), "{}\n")
	writeFile(t, filepath.Join(f.data, "big.json"), strings.Repeat("x", 100))
	symlink(t, "/root", filepath.Join(f.ws, "escape"))
	symlink(t, "../outside", filepath.Join(f.ws, "up"))
	cfg := `sandbox:
  root: ws
  system: host
  mounts:
    - {source: data, name: data, suffixes: [.json], max_file_bytes: 64}
  deny: [.env]
  protect: [.git/hooks, .git/config]
  protect_defaults: false
  limits: {timeout: 20s}
audit: audit.jsonl
` + extra
	writeFile(t, f.config, cfg)
	return f
}
