package cordon_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/overlay"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// gitEnv makes git usable without a global config, in and out of the
// sandbox.
var gitEnv = "-c user.email=t@example.com -c user.name=t -c init.defaultBranch=main"

// overlayRepo is a git repository with one commit, the sandbox of a
// project rooted at it, and a private overlay store.
func overlayRepo(t *testing.T) (string, *cordon.Sandbox) {
	t.Helper()
	testenv.RequireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Setenv("CORDON_OVERLAY_DIR", filepath.Join(t.TempDir(), "overlays"))
	// overlayfs leaves a work directory of mode 0 that the temporary
	// directory's removal cannot enter; discard removes it.
	t.Cleanup(func() {
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
	})
	ws := filepath.Join(t.TempDir(), "repo")
	writeFile(t, filepath.Join(ws, "README"), "hello\n")
	writeFile(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	hostGit(t, ws, "init", "-q")
	hostGit(t, ws, "add", "-A")
	hostGit(t, ws, "commit", "-qm", "init")
	cfg, err := spec.Parse([]byte("sandbox:\n  root: .\n  limits: {timeout: 60s}\n"), ws, "test")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := cordon.NewProject(cfg).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	return ws, sb
}

func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append(strings.Fields(gitEnv), args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// snapshot lists every path of dir with its type, mode and content hash.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := ""
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(data)
			sum = hex.EncodeToString(h[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			sum, _ = os.Readlink(p)
		}
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, fi.Mode(), sum))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func runInOverlay(t *testing.T, sb *cordon.Sandbox, name, script string) (cordon.Result, string) {
	t.Helper()
	var out strings.Builder
	res, err := sb.Run(context.Background(), []string{"sh", "-c", script}, cordon.InOverlay(name),
		cordon.Stdout(&out), cordon.Stderr(&out), cordon.Dir(sb.Spec().Root))
	if err != nil {
		t.Fatalf("run in %s: %v", name, err)
	}
	return res, out.String()
}

// TestIntegrationOverlayParallelCommits: two overlays of one repository
// each commit on a branch of their own; neither sees the other's work,
// the host tree is byte for byte the same before, during and after the
// runs, the first applies and the second is refused naming the paths
// both changed (the index, HEAD).
func TestIntegrationOverlayParallelCommits(t *testing.T) {
	ws, sb := overlayRepo(t)
	before := snapshot(t, ws)
	for _, name := range []string{"a", "b"} {
		res, out := runInOverlay(t, sb, name, fmt.Sprintf("git checkout -q -b %[1]s && echo %[1]s > %[1]s.txt && git add %[1]s.txt && git %[2]s commit -qm %[1]s && git log --oneline | wc -l && ls", name, gitEnv))
		if res.ExitCode != 0 || !strings.HasPrefix(out, "2\n") {
			t.Fatalf("overlay %s: %+v\n%s", name, res, out)
		}
		other := map[string]string{"a": "b.txt", "b": "a.txt"}[name]
		if strings.Contains(out, other) {
			t.Errorf("overlay %s sees %s:\n%s", name, other, out)
		}
		if res.Overlay != name || !contains(res.OverlayChanges, name+".txt") || !contains(res.OverlayChanges, ".git/HEAD") {
			t.Errorf("result names overlay %q, changes %v", res.Overlay, res.OverlayChanges)
		}
	}
	// During a run: the command has written and waits on stdin.
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := sb.Run(context.Background(), []string{"sh", "-c", "echo during > README && rm src/main.go && echo ready && read x"},
			cordon.InOverlay("a"), cordon.Stdin(pr), cordon.Stdout(outW), cordon.Dir(ws))
		outW.Close()
		done <- err
	}()
	if line, _ := bufio.NewReader(outR).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the run said %q", line)
	}
	if got := snapshot(t, ws); got != before {
		t.Errorf("the host tree changed during the run:\n%s\nwant\n%s", got, before)
	}
	pw.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, ws); got != before {
		t.Errorf("the host tree changed before apply:\n%s\nwant\n%s", got, before)
	}
	if _, err := sb.ApplyOverlay("a", false); err != nil {
		t.Fatalf("apply a: %v", err)
	}
	if got := hostGit(t, ws, "log", "--oneline", "a"); !strings.Contains(got, " a\n") {
		t.Errorf("branch a on the host: %q", got)
	}
	if hostGit(t, ws, "rev-parse", "--abbrev-ref", "HEAD") != "a\n" || readFile(t, filepath.Join(ws, "README")) != "during\n" {
		t.Errorf("host HEAD or README not applied")
	}
	if _, err := os.Lstat(filepath.Join(ws, "src", "main.go")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deletion was not applied: %v", err)
	}
	afterA := snapshot(t, ws)
	_, err := sb.ApplyOverlay("b", false)
	var ce *overlay.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, cordon.ErrOverlayConflict) || !contains(ce.Paths, filepath.Join(ws, ".git/HEAD")) {
		t.Fatalf("apply b = %v, want a conflict naming .git/HEAD", err)
	}
	if got := snapshot(t, ws); got != afterA {
		t.Errorf("a refused apply changed the host")
	}
}

// TestIntegrationOverlayDenyHidden: with nothing brokered, a deny path
// that exists stays hidden in an overlay run, and one the run creates
// there is refused at apply whatever the flag.
func TestIntegrationOverlayDenyHidden(t *testing.T) {
	ws, _ := overlayRepo(t)
	writeFile(t, filepath.Join(ws, ".env"), "TOKEN=secret\n")
	cfg, err := spec.Parse([]byte("sandbox:\n  root: .\n  deny: [.env, secrets]\n"), ws, "test")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := cordon.NewProject(cfg).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	_, out := runInOverlay(t, sb, "deny", "cat .env; mkdir secrets && echo s > secrets/k")
	if strings.Contains(out, "secret") {
		t.Fatalf("the deny path was readable in the overlay: %s", out)
	}
	_, err = sb.ApplyOverlay("deny", true)
	var pe *overlay.ProtectedError
	if !errors.As(err, &pe) || pe.Liftable {
		t.Fatalf("apply = %v, want the deny path refused", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "secrets")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("secrets landed: %v", err)
	}
}

// TestIntegrationOverlayDisjointApply: two overlays changing different
// files both apply.
func TestIntegrationOverlayDisjointApply(t *testing.T) {
	ws, sb := overlayRepo(t)
	runInOverlay(t, sb, "x", "echo x > x.txt")
	runInOverlay(t, sb, "y", "echo y >> README")
	for _, n := range []string{"x", "y"} {
		if _, err := sb.ApplyOverlay(n, false); err != nil {
			t.Fatalf("apply %s: %v", n, err)
		}
	}
	if readFile(t, filepath.Join(ws, "x.txt")) != "x\n" || readFile(t, filepath.Join(ws, "README")) != "hello\ny\n" {
		t.Error("the two overlays did not both land")
	}
}

// TestIntegrationOverlayHookRefused: a hook and cordon.yaml, written in
// an overlay run (nothing is brokered there: they land in the upper
// layer), are refused at apply, by path and rule; nothing lands: no hook,
// no config, not the other change.
func TestIntegrationOverlayHookRefused(t *testing.T) {
	ws, sb := overlayRepo(t)
	hook := filepath.Join(ws, ".git", "hooks", "pre-commit")
	res, out := runInOverlay(t, sb, "h", "echo changed > README; echo 'sandbox: {}' > cordon.yaml; printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit")
	if res.ExitCode != 0 || !contains(res.OverlayChanges, ".git/hooks/pre-commit") {
		t.Fatalf("planting the hook in the overlay: %+v\n%s", res, out)
	}
	var err error
	before := snapshot(t, ws)
	_, err = sb.ApplyOverlay("h", false)
	var pe *overlay.ProtectedError
	if !errors.As(err, &pe) || !errors.Is(err, cordon.ErrOverlayProtected) || len(pe.Refused) != 2 ||
		pe.Refused[0].Path != hook || pe.Refused[1].Path != filepath.Join(ws, "cordon.yaml") {
		t.Fatalf("apply = %v, want the hook and cordon.yaml refused", err)
	}
	if _, err := os.Lstat(hook); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the hook is on the host: %v", err)
	}
	if got := snapshot(t, ws); got != before {
		t.Error("a refused apply changed the host")
	}
}

// TestIntegrationOverlayDiscard: discard leaves nothing in the store and
// the host as it was.
func TestIntegrationOverlayDiscard(t *testing.T) {
	ws, sb := overlayRepo(t)
	before := snapshot(t, ws)
	runInOverlay(t, sb, "d", "mkdir -p deep/er && echo x > deep/er/f && rm README && git "+gitEnv+" commit -qam gone")
	st, err := cordon.OverlayStore()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Discard("d"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(st.Dir); len(ents) != 1 || ents[0].Name() != ".lock" {
		t.Errorf("discard left %v (only the store's lock file may stay)", ents)
	}
	if got := snapshot(t, ws); got != before {
		t.Error("the host changed")
	}
}

// TestIntegrationOverlaySIGKILL: a cordon killed mid-run leaves an
// overlay that can still be diffed and discarded (its lock went with it).
func TestIntegrationOverlaySIGKILL(t *testing.T) {
	ws, _ := overlayRepo(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "CORDON_TEST_OVERLAY_HELPER="+ws)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	st, err := cordon.OverlayStore()
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := o.Changes()
	if err != nil || len(cs) != 1 || cs[0].Path != "killed.txt" {
		t.Fatalf("changes after SIGKILL = %+v, %v", cs, err)
	}
	if err := o.WriteDiff(io.Discard, cs, true); err != nil {
		t.Fatal(err)
	}
	if err := st.Discard("k"); err != nil {
		t.Fatalf("discard after SIGKILL: %v", err)
	}
}

// overlayHelper is the cordon a test kills: it runs a command in overlay
// k of the workspace dir that says ready and then waits.
func overlayHelper(dir string) int {
	cfg, err := spec.Parse([]byte("sandbox:\n  root: .\n"), dir, "helper")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sb, err := cordon.NewProject(cfg).Sandbox()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = sb.Run(context.Background(), []string{"sh", "-c", "echo k > killed.txt && echo ready && sleep 600"},
		cordon.InOverlay("k"), cordon.Stdout(os.Stdout), cordon.Dir(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestIntegrationOverlaySession: a session in an overlay writes to it,
// not to the host; the overlay is held while the session lives (a run in
// it is refused as in use) and free once it ends.
func TestIntegrationOverlaySession(t *testing.T) {
	ws, sb := overlayRepo(t)
	before := snapshot(t, ws)
	sess, err := sb.StartSession(context.Background(), cordon.SessionOverlay("s"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.Exec(context.Background(), []string{"sh", "-c", "echo s > s.txt && git add -A && git " + gitEnv + " commit -qm s"}, cordon.Dir(ws))
	if err != nil || res.ExitCode != 0 {
		sess.Close()
		t.Fatalf("exec: %+v %v", res, err)
	}
	if _, err := sb.Run(context.Background(), []string{"true"}, cordon.InOverlay("s")); !errors.Is(err, cordon.ErrOverlayInUse) {
		t.Errorf("a run in the session's overlay = %v, want ErrOverlayInUse", err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	<-sess.Done()
	if got := snapshot(t, ws); got != before {
		t.Error("the session changed the host")
	}
	st, err := cordon.OverlayStore()
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.Get("s")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := o.Changes()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range cs {
		paths = append(paths, c.Path)
	}
	if !contains(paths, "s.txt") || !contains(paths, ".git/refs/heads/main") {
		t.Errorf("the overlay holds %v", paths)
	}
	// The lock goes with the session (released once Done is closed).
	for i := 0; ; i++ {
		if _, err := sb.ApplyOverlay("s", false); err == nil {
			break
		} else if !errors.Is(err, cordon.ErrOverlayInUse) || i == 3000 {
			t.Fatalf("apply after the session: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if readFile(t, filepath.Join(ws, "s.txt")) != "s\n" {
		t.Error("s.txt not applied")
	}
}
