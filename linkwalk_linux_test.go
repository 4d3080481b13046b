package cordon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

// TestIntegrationRunLinkWalkOnce: a run started as `cordon run` starts
// one (the project's sandbox, adjusted by the front end's flags, run at
// once) walks the workspace for what deny and protect reach through
// symlinks once, not in the front end and again in the plan (a session's
// start too); the rule
// still holds on the link's target (a write through the protected
// hooks link is refused and the hook is unchanged). A Sandbox kept past
// the reuse bound walks afresh for its run. Root and rootless
// (hack/test-rootless.sh).
func TestIntegrationRunLinkWalkOnce(t *testing.T) {
	testenv.RequireSandbox(t)
	const hook = "#!/bin/sh\n"
	ws := t.TempDir()
	mkFile(t, filepath.Join(ws, "realhooks/pre-push"), hook)
	mkFile(t, filepath.Join(ws, "sub/.git/HEAD"), "x\n")
	if err := os.Symlink("../../realhooks", filepath.Join(ws, "sub/.git/hooks")); err != nil {
		t.Fatal(err)
	}
	cfg, err := spec.Profile("workspace", ws)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runnerlinux.New(runner.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *cordon.Sandbox) cordon.Result {
		t.Helper()
		res, err := s.Run(context.Background(), []string{"sh", "-c", "echo x > realhooks/pre-push"}, cordon.Dir(ws))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	n := spec.LinkWalks()
	top, err := cordon.NewProject(cfg, cordon.WithRunner(r)).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	s, err := top.Override(spec.Overrides{Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	res := run(s)
	if walks := spec.LinkWalks() - n; walks != 1 {
		t.Errorf("the run walked the workspace %d times; want 1", walks)
	}
	if res.ExitCode == 0 {
		t.Errorf("a write through the protected hooks link succeeded: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "realhooks/pre-push")); err != nil || string(b) != hook {
		t.Fatalf("the hook changed: %q, %v", b, err)
	}
	// A session started as `cordon session start` starts one walks once
	// too, and holds the rule.
	n = spec.LinkWalks()
	top, err = cordon.NewProject(cfg, cordon.WithRunner(r)).Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	sess, err := top.StartSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if walks := spec.LinkWalks() - n; walks != 1 {
		t.Errorf("the session start walked the workspace %d times; want 1", walks)
	}
	sres, err := sess.Exec(context.Background(), []string{"sh", "-c", "echo x > realhooks/pre-push"}, cordon.Dir(ws))
	if err != nil || sres.ExitCode == 0 {
		t.Errorf("a session's write through the protected hooks link: %+v, %v; want it refused", sres, err)
	}
	if err := sess.Close(); err != nil {
		t.Error(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "realhooks/pre-push")); err != nil || string(b) != hook {
		t.Fatalf("the hook changed: %q, %v", b, err)
	}
	// Past the bound the front end's walk is not reused.
	time.Sleep(1100 * time.Millisecond)
	n = spec.LinkWalks()
	if res := run(s); res.ExitCode == 0 {
		t.Errorf("a later write through the protected hooks link succeeded: %+v", res)
	}
	if walks := spec.LinkWalks() - n; walks != 1 {
		t.Errorf("a run of a Sandbox made long before walked %d times; want 1 (afresh)", walks)
	}
}
