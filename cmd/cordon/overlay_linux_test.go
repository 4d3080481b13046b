package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
)

// TestCLIOverlay: run --overlay writes nothing to the host; diff, --json
// and overlays show the overlay; apply refuses the protected cordon.yaml
// (exit 1, naming it, landing nothing) until --allow-protected; discard
// leaves nothing, after which the name is unknown (exit 2).
func TestCLIOverlay(t *testing.T) {
	testenv.RequireSandbox(t)
	t.Setenv("CORDON_OVERLAY_DIR", filepath.Join(t.TempDir(), "overlays"))
	ws := t.TempDir()
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n")
	r := runCLI(t, ws, "run", "--config", cfg, "--overlay", "o", "--", "sh", "-c", "echo x > new.txt && echo '# more' >> cordon.yaml")
	if r.code != 0 || fileExists(filepath.Join(ws, "new.txt")) {
		t.Fatalf("run: %+v (or new.txt reached the host)", r)
	}
	if r := runCLI(t, ws, "diff", "o"); r.code != 0 || !strings.Contains(r.stdout, "diff --git a/new.txt b/new.txt\nnew file mode 100644\n") {
		t.Errorf("diff: %+v", r)
	}
	r = runCLI(t, ws, "diff", "--json", "o")
	var out struct {
		Overlay string
		Changes []struct{ Path, Kind string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Overlay != "o" || len(out.Changes) != 2 {
		t.Errorf("diff --json: %v %+v", err, r)
	}
	if r := runCLI(t, ws, "overlays"); !strings.Contains(r.stdout, "o  ") || !strings.Contains(r.stdout, ws) {
		t.Errorf("overlays: %+v", r)
	}
	r = runCLI(t, ws, "apply", "--config", cfg, "o")
	if r.code != 1 || !strings.Contains(r.stderr, cfg+" (protect "+cfg+")") || fileExists(filepath.Join(ws, "new.txt")) {
		t.Errorf("apply of a protected change: %+v", r)
	}
	if r := runCLI(t, ws, "apply", "--config", cfg, "--allow-protected", "o"); r.code != 0 || !fileExists(filepath.Join(ws, "new.txt")) {
		t.Errorf("apply --allow-protected: %+v", r)
	}
	if r := runCLI(t, ws, "discard", "o"); r.code != 0 {
		t.Errorf("discard: %+v", r)
	}
	if r := runCLI(t, ws, "diff", "o"); r.code != 2 || !strings.Contains(r.stderr, "no such overlay") {
		t.Errorf("diff after discard: %+v", r)
	}
}
