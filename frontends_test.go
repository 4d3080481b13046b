package cordon

import (
	"go/parser"
	"go/token"
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
	for _, dir := range []string{"cmd/cordon", "internal/mcpserver", "internal/session"} {
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
