package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIOverlayConfigMode, root and rootless: with workspace_mode:
// overlay in cordon.yaml, cordon run and a session write the configured
// overlay, not the workspace; the report names it; diff shows the run's
// file and the session continues from it; a run while the session holds
// the overlay is overlay_in_use (exit 125, with the fix), not a bare
// setup error; discard leaves nothing. A bad mode is refused naming the
// key and the value (exit 2).
func TestCLIOverlayConfigMode(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			if u.prefix == nil {
				u.env = append(u.env, "CORDON_OVERLAY_DIR="+filepath.Join(t.TempDir(), "overlays"))
			}
			name := uniqueName("ov")
			cfg := filepath.Join(u.ws, "cordon.yaml")
			writeFile(t, cfg, "sandbox:\n  root: .\n  workspace_mode: overlay\n  overlay: "+name+"\n")
			t.Cleanup(func() {
				u.run(t, "", "discard", name)
				os.Remove(cfg)
			})
			r := u.run(t, "", "run", "--config", cfg, "--json", "--", "sh", "-c", "echo x > new.txt")
			if r.code != 0 || !strings.Contains(r.stderr, `"overlay": "`+name+`"`) || !strings.Contains(r.stderr, `"new.txt"`) {
				t.Fatalf("run: %+v", r)
			}
			if fileExists(filepath.Join(u.ws, "new.txt")) {
				t.Fatal("the run wrote the host workspace")
			}
			if r := u.run(t, "", "diff", name); r.code != 0 || !strings.Contains(r.stdout, "+++ b/new.txt") {
				t.Errorf("diff: %+v", r)
			}
			sess := uniqueName("ovs")
			startNamed(t, u, sess, "--config", cfg)
			if r := u.run(t, "", "exec", sess, "--", "cat", "new.txt"); r.code != 0 || r.stdout != "x\n" {
				t.Errorf("exec in the session (the run's file): %+v", r)
			}
			r = u.run(t, "", "run", "--config", cfg, "--json", "--", "sh", "-c", "echo y > ran.txt")
			if r.code != 125 || !strings.Contains(r.stderr, `"failure_type": "overlay_in_use"`) || !strings.Contains(r.stderr, "fix: wait for it to end") {
				t.Errorf("a run while the session holds the overlay: %+v", r)
			}
			u.run(t, "", "session", "stop", sess)
			if fileExists(filepath.Join(u.ws, "ran.txt")) || fileExists(filepath.Join(u.ws, "new.txt")) {
				t.Error("the host workspace was written")
			}
		})
	}
	ws := t.TempDir()
	cfg := filepath.Join(ws, "cordon.yaml")
	writeFile(t, cfg, "sandbox:\n  root: .\n  workspace_mode: cow\n")
	if r := runCLI(t, ws, "run", "--config", cfg, "--", "true"); r.code != 2 || !strings.Contains(r.stderr, `sandbox.workspace_mode (line 3): "cow" is not a workspace mode`) {
		t.Errorf("workspace_mode: cow: %+v", r)
	}
}
