package cordon

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFrontEndsImportNoBackend keeps the root package the one composition
// root: the front ends (the CLI, the MCP server and the session server
// behind `cordon exec`) reach the backend, the audit log and attachments
// only through it, so none of them can wire a run differently. What a
// front end needs from the backend (an exit code, a failure type) the
// root re-exports.
func TestFrontEndsImportNoBackend(t *testing.T) {
	forbidden := []string{
		"github.com/cordon-run/cordon/runner",
		"github.com/cordon-run/cordon/darwin",
		"github.com/cordon-run/cordon/internal/audit",
		"github.com/cordon-run/cordon/internal/attach",
		"github.com/opencontainers/runc",
	}
	for _, dir := range []string{"cmd/cordon", "cmd/cordon/internal/mcpserver", "cmd/cordon/internal/sessiond"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s; front ends go through the root package", f, path)
					}
				}
			}
		}
	}
}

// TestOnlyTheRootImportsTheLinuxBackend: runner/linux has no compatibility
// promise, so outside its own directory only the composition root (this
// package) imports it: the OCI runtime (internal/ociruntime) gets the
// backend's broker and process conversion from the root (OCIMain), as a
// value. Its own rooms (runner/linux/internal/...) import each other but
// never runner/linux itself: no import runs back up. testenv, which
// decides whether tests can start sandboxes, is imported by tests only.
// Tests may import the backend.
func TestOnlyTheRootImportsTheLinuxBackend(t *testing.T) {
	const backend = "github.com/cordon-run/cordon/runner/linux"
	const testenv = "github.com/cordon-run/cordon/internal/testenv"
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(p))
		af, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case path == testenv && dir != "internal/testenv":
				t.Errorf("%s imports %s; only tests import it", p, path)
			case path != backend && !strings.HasPrefix(path, backend+"/"):
			case dir == "." || dir == "runner/linux":
			case strings.HasPrefix(dir, "runner/linux/"):
				if path == backend {
					t.Errorf("%s imports %s: a room of the backend imports its siblings, never the backend above it", p, path)
				}
			default:
				t.Errorf("%s imports %s; only the root package wires the Linux backend", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestInternalImportsNothingAbove: the packages under internal/ are the
// leaves the root, the runner and its backend build on, so none of them
// imports the root package or anything under runner/ (an import back up
// would make the house a loop of floors). Tests may.
func TestInternalImportsNothingAbove(t *testing.T) {
	const module = "github.com/cordon-run/cordon"
	err := filepath.WalkDir("internal", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		af, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == module || path == module+"/runner" || strings.HasPrefix(path, module+"/runner/") {
				t.Errorf("%s imports %s; internal/ holds leaves below the root and the runner", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
