package cordon_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/runner"
)

func TestSessionExecAndClose(t *testing.T) {
	testenv.RequireSandbox(t)
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sb.StartSession(context.Background())
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	defer s.Close()
	var out bytes.Buffer
	res, err := s.Exec(context.Background(), []string{"cat", "docs/brief.md"}, cordon.Stdout(&out))
	if err != nil || res.ExitCode != 0 || out.String() != "the brief\n" {
		t.Fatalf("Exec: %+v %v %q", res, err, out.String())
	}
	// The deny list holds in a session as in Run, and is recorded.
	res, err = s.Exec(context.Background(), []string{"cat", ".env"})
	if err != nil || res.ExitCode == 0 || res.FailureType != runner.FailureSandboxDenied {
		t.Fatalf("reading a denied file: %+v %v", res, err)
	}
	recs := testenv.ReadAudit(t, filepath.Join(dir, "audit.jsonl"))
	if len(recs) < 2 {
		t.Fatalf("the audit log holds %d records, want one per exec", len(recs))
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	res, err = s.Exec(context.Background(), []string{"true"})
	if !errors.Is(err, runner.ErrSessionGone) || res.FailureType != runner.FailureSessionGone || !strings.Contains(res.FailureDetail, "stopped") {
		t.Fatalf("Exec after Close: %+v %v", res, err)
	}
}

func TestSessionIdleTimeout(t *testing.T) {
	testenv.RequireSandbox(t)
	p, err := cordon.LoadProject(newProjectDir(t))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sb.StartSession(context.Background(), cordon.SessionIdleTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A command running longer than the idle timeout keeps the session up.
	if res, err := s.Exec(context.Background(), []string{"sleep", "0.6"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("a long exec: %+v %v", res, err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the idle session did not stop itself")
	}
	res, err := s.Exec(context.Background(), []string{"true"})
	if !errors.Is(err, runner.ErrSessionGone) || !strings.Contains(res.FailureDetail, "idle") {
		t.Fatalf("Exec after the idle timeout: %+v %v", res, err)
	}
}
