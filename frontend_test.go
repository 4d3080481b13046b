package cordon_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/spec"
)

// TestOverrideKeepsControlFilesGuarded checks the front ends' override: a
// widening flag on the top level applies, the config and every audit log
// stay out of reach after it, and on a worker it is refused as widening.
func TestOverrideKeepsControlFilesGuarded(t *testing.T) {
	dir := newProjectDir(t)
	extra := filepath.Join(t.TempDir(), "extra.jsonl")
	p, err := cordon.LoadProject(dir, cordon.WithAuditFile(extra), cordon.WithFrontEnd(cordon.FrontEndCLI))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	s, err := top.Override(spec.Overrides{Network: true, Mounts: []string{filepath.Dir(extra) + ":/logs"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sb := s.Spec()
	if !sb.Network.Enabled || !slices.Contains(sb.Deny, extra) || !slices.Contains(sb.Deny, filepath.Join(dir, "audit.jsonl")) ||
		!slices.Contains(sb.Protect, filepath.Join(dir, "cordon.yaml")) {
		t.Fatalf("overridden sandbox: network %v deny %v protect %v; want network and the control files guarded", sb.Network.Enabled, sb.Deny, sb.Protect)
	}
	w, err := top.Worker(filepath.Join(dir, "workers", "pure.worker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Override(spec.Overrides{Network: true}); !errors.Is(err, cordon.ErrWidening) {
		t.Fatalf("network on a worker = %v, want ErrWidening", err)
	}
}

// TestAttachFiles checks attachments without a worker: a file the sandbox
// can read is readable through Files at its path, and a denied one is
// refused and recorded with the front end's name.
func TestAttachFiles(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir, cordon.WithFrontEnd(cordon.FrontEndCLI))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	brief := filepath.Join(dir, "docs", "brief.md")
	s, err := top.AttachFiles([]string{brief})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Files().Read(brief, 0); err != nil || got != "the brief\n" {
		t.Errorf("Read(attachment) = %q, %v", got, err)
	}
	if _, err := top.AttachFiles([]string{".env"}); !errors.Is(err, cordon.ErrAttachmentOutside) || !errors.Is(err, cordon.ErrDenied) {
		t.Fatalf("attaching .env = %v, want ErrAttachmentOutside and ErrDenied", err)
	}
	var got []string
	for _, r := range testenv.ReadAudit(t, filepath.Join(dir, "audit.jsonl")) {
		got = append(got, r.Via+" "+r.Source+" "+r.Rule)
	}
	if strings.Join(got, ",") != "cli attach deny" {
		t.Errorf("audit = %v, want the refused attachment only", got)
	}
}
