package cordon_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// modeSandbox is the sandbox of overlayRepo's workspace from a config
// with workspace_mode: overlay (and extra keys of the sandbox section).
func modeSandbox(t *testing.T, ws, extra string) *cordon.Sandbox {
	t.Helper()
	cfg, err := spec.Parse([]byte("sandbox:\n  root: .\n  limits: {timeout: 60s}\n  workspace_mode: overlay\n"+extra), ws, "test")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := cordon.NewProject(cfg).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// TestIntegrationOverlayConfigMode: with workspace_mode: overlay a plain
// Run and a plain session write the overlay named after the workspace
// folder (or by overlay:), never the host; the result names it; a run
// while a session holds it is typed overlay_in_use (exit 125, with what
// to do), not a bare setup error.
func TestIntegrationOverlayConfigMode(t *testing.T) {
	ws, _ := overlayRepo(t)
	before := snapshot(t, ws)
	for _, tt := range []struct{ extra, name string }{{"", "repo"}, {"  overlay: named\n", "named"}} {
		sb := modeSandbox(t, ws, tt.extra)
		var out strings.Builder
		res, err := sb.Run(context.Background(), []string{"sh", "-c", "echo new > new.txt && cat new.txt"}, cordon.Stdout(&out), cordon.Dir(ws))
		if err != nil || res.ExitCode != 0 || out.String() != "new\n" {
			t.Fatalf("run: %+v %v %q", res, err, out.String())
		}
		if res.Overlay != tt.name || !contains(res.OverlayChanges, "new.txt") || res.OverlayChanged != 1 {
			t.Errorf("result overlay %q changes %v, want %s with new.txt", res.Overlay, res.OverlayChanges, tt.name)
		}
		if got := snapshot(t, ws); got != before {
			t.Fatal("a run in workspace_mode: overlay changed the host")
		}
	}
	sb := modeSandbox(t, ws, "")
	sess, err := sb.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if sess.Overlay() != "repo" {
		t.Errorf("session overlay %q, want repo", sess.Overlay())
	}
	var eout strings.Builder
	res, err := sess.Exec(context.Background(), []string{"sh", "-c", "cat new.txt && echo s > s.txt"}, cordon.Dir(ws), cordon.Stderr(&eout), cordon.Stdout(&eout))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec (the run's file continues in the session): %+v %v %s", res, err, eout.String())
	}
	res, err = sb.Run(context.Background(), []string{"sh", "-c", "echo ran > ran.txt"}, cordon.Dir(ws))
	if !errors.Is(err, cordon.ErrOverlayInUse) || res.FailureType != cordon.FailureOverlayInUse || res.ExitCode != cordon.ExitSetupError ||
		res.Overlay != "repo" || !strings.Contains(res.FailureDetail, "fix: wait for it to end, or give another name") {
		t.Errorf("a run while the session holds the overlay: %+v %v", res, err)
	}
	if got := snapshot(t, ws); got != before {
		t.Fatal("the session or the refused run changed the host")
	}
}

// TestIntegrationSessionFilesOverlay: a session's Files in an overlay
// read and write the session's own mount: a write is what the next exec
// reads, an exec's write is what Read returns, the host is untouched, and
// a protect path is refused at write time with nothing written to the
// overlay or the host.
func TestIntegrationSessionFilesOverlay(t *testing.T) {
	ws, sb := overlayRepo(t)
	before := snapshot(t, ws)
	sess, err := sb.StartSession(context.Background(), cordon.SessionOverlay("f"))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	files, done, err := sess.Files()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if err := files.Write("src/tool.txt", "tool\n"); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, err := sess.Exec(context.Background(), []string{"sh", "-c", "cat src/tool.txt; echo exec > exec.txt"}, cordon.Stdout(&out), cordon.Dir(ws))
	if err != nil || res.ExitCode != 0 || out.String() != "tool\n" {
		t.Errorf("exec does not see the write: %+v %v %q", res, err, out.String())
	}
	if got, err := files.Read(filepath.Join(ws, "exec.txt"), 0); err != nil || got != "exec\n" {
		t.Errorf("Read does not see the exec's write: %q %v", got, err)
	}
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	if err := files.Write(hook, "#!/bin/sh\necho evil\n"); err == nil || !strings.Contains(err.Error(), "protect") {
		t.Errorf("write of a hook = %v, want a protect refusal", err)
	}
	out.Reset()
	res, _ = sess.Exec(context.Background(), []string{"sh", "-c", "test -e .git/hooks/pre-commit && echo present || echo absent"}, cordon.Stdout(&out), cordon.Dir(ws))
	if out.String() != "absent\n" {
		t.Errorf("the refused hook is in the overlay: %q %+v", out.String(), res)
	}
	if got := snapshot(t, ws); got != before {
		t.Error("the session's file tools changed the host")
	}
}

// TestIntegrationOverlayResultCapped: a run that makes more files than
// runner.MaxOverlayChanges gets their count and the first paths only.
func TestIntegrationOverlayResultCapped(t *testing.T) {
	ws, sb := overlayRepo(t)
	n := runner.MaxOverlayChanges + 5
	res, out := runInOverlay(t, sb, "many", fmt.Sprintf("mkdir m && cd m && seq 1 %d | xargs touch", n))
	if res.ExitCode != 0 {
		t.Fatalf("run: %+v %s", res, out)
	}
	if res.OverlayChanged != n || len(res.OverlayChanges) != runner.MaxOverlayChanges || res.OverlayChanges[0] != "m/1" {
		t.Errorf("result: %d changed, %d listed (first %v), want %d and %d", res.OverlayChanged, len(res.OverlayChanges),
			res.OverlayChanges[:min(1, len(res.OverlayChanges))], n, runner.MaxOverlayChanges)
	}
	if _, err := os.Stat(filepath.Join(ws, "m")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the run wrote the host: %v", err)
	}
}
