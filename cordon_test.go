package cordon_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/testenv"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// TestMain carries the init hook: Run re-executes this test binary as the
// sandbox's init.
func TestMain(m *testing.M) {
	cordon.Init()
	if dir := os.Getenv("CORDON_TEST_OVERLAY_HELPER"); dir != "" {
		os.Exit(overlayHelper(dir))
	}
	os.Exit(m.Run())
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

// newProjectDir writes a project: a cordon.yaml with an audit log, a
// workspace with docs/ and src/, and worker files.
func newProjectDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "cordon.yaml"), "sandbox:\n  root: .\n  deny: [.env]\n  limits: {timeout: 30s}\naudit: audit.jsonl\n")
	// A discovered config is used only once trusted (cordon trust).
	t.Setenv("CORDON_TRUST_FILE", filepath.Join(t.TempDir(), "trusted"))
	if err := spec.Trust(filepath.Join(dir, "cordon.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "docs", "brief.md"), "the brief\n")
	writeFile(t, filepath.Join(dir, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(dir, ".env"), "TOKEN=1\n")
	writeFile(t, filepath.Join(dir, "workers", "pure.worker.yaml"), "name: pure\n")
	writeFile(t, filepath.Join(dir, "workers", "net.worker.yaml"), "name: net\nsandbox:\n  network: true\n")
	writeFile(t, filepath.Join(dir, "workers", "src.worker.yaml"), "name: src\nsandbox:\n  restrict: src\n")
	return dir
}

// TestLoadProjectDiscovery checks that the config is found upwards and
// that without one the workspace profile is rooted at the directory.
func TestLoadProjectDiscovery(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(filepath.Join(dir, "src"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Config().Source; got != filepath.Join(dir, "cordon.yaml") {
		t.Errorf("config source = %s, want the cordon.yaml above", got)
	}
	bare := t.TempDir()
	p, err = cordon.LoadProject(bare)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	if top.Spec().Root != bare || top.Spec().Network.Enabled || p.Config().Source != "profile:workspace" {
		t.Errorf("no config: sandbox %+v from %s, want the workspace profile at %s", top.Spec(), p.Config().Source, bare)
	}
}

// TestDeriveRefusalIsRecorded checks a widening worker: the error names the
// rule and matches spec.ErrWidening, and the audit log records it.
func TestDeriveRefusalIsRecorded(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Worker(filepath.Join(dir, "workers", "net.worker.yaml"))
	if !errors.Is(err, spec.ErrWidening) || w != nil || !strings.Contains(err.Error(), "rule network") {
		t.Fatalf("Worker(net) = %v, %v; want a widening refusal naming rule network", w, err)
	}
	_, err = p.Worker(filepath.Join(dir, "workers", "pure.worker.yaml"), cordon.Attach(".env"))
	if !errors.Is(err, cordon.ErrAttachmentOutside) || !errors.Is(err, mounts.ErrDenied) {
		t.Fatalf("attaching a denied file = %v, want ErrAttachmentOutside and mounts.ErrDenied", err)
	}
	var got []string
	for _, r := range testenv.ReadAudit(t, filepath.Join(dir, "audit.jsonl")) {
		got = append(got, r.Via+" "+r.Source+" "+r.Rule)
	}
	if want := "api derive network,api attach deny"; strings.Join(got, ",") != want {
		t.Errorf("audit = %v, want %s", got, want)
	}
}

// TestFilesRefusalIsRecorded checks the file tools of a worker: a write
// outside is refused with the typed error, nothing is written, and the
// refusal is recorded.
func TestFilesRefusalIsRecorded(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Worker(filepath.Join(dir, "workers", "src.worker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if err := files.Write("new.go", "package main\n"); err != nil {
		t.Fatal(err)
	}
	err = files.Write(filepath.Join(dir, "docs", "brief.md"), "overwritten\n")
	if !errors.Is(err, mounts.ErrOutsideSandbox) || !strings.Contains(err.Error(), "writable: ") {
		t.Fatalf("write outside the worker = %v, want ErrOutsideSandbox listing what is writable", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "docs", "brief.md")); string(data) != "the brief\n" {
		t.Errorf("brief.md changed: %q", data)
	}
	if files.CanRead(filepath.Join(dir, "docs", "brief.md")) || !files.CanWrite(filepath.Join(dir, "src", "x.go")) {
		t.Errorf("CanRead outside = true or CanWrite inside = false")
	}
	recs := testenv.ReadAudit(t, filepath.Join(dir, "audit.jsonl"))
	if len(recs) != 2 || recs[0].Source != audit.SourceQuery || recs[0].Op != "write" || recs[0].Rule != "outside" ||
		strings.Join(recs[0].Lineage, ">") != "src" {
		t.Errorf("audit = %+v, want the write and the CanRead refusals as query denials of worker src", recs)
	}
}

// TestRunFailsClosedOnAudit checks that a run whose start cannot be
// recorded is not started.
func TestRunFailsClosedOnAudit(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir, cordon.WithAuditFile(filepath.Join(dir, "missing", "audit.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.Sandbox()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	res, err := top.Run(context.Background(), []string{"touch", marker})
	if !errors.Is(err, cordon.ErrAuditWrite) || res.FailureType != runner.FailureSetupError || res.ExitCode != runner.ExitSetupError {
		t.Fatalf("Run = %+v, %v; want a set-up failure matching ErrAuditWrite", res, err)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("the command ran although its start could not be recorded")
	}
}

// TestRunAttachmentStreams runs a pure-function worker with an attachment:
// output streams to the writers, the attachment is readable and read-only.
func TestRunAttachmentStreams(t *testing.T) {
	testenv.RequireSandbox(t)
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Worker(filepath.Join(dir, "workers", "pure.worker.yaml"), cordon.Attach("docs/brief.md"))
	if err != nil {
		t.Fatal(err)
	}
	brief := filepath.Join(dir, "docs", "brief.md")
	var stdout, stderr bytes.Buffer
	res, err := w.Run(context.Background(), []string{"sh", "-c", "cat " + brief + "; echo x >> " + brief},
		cordon.Stdout(&stdout), cordon.Stderr(&stderr))
	if err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "the brief\n" || !strings.Contains(stderr.String(), "Read-only file system") {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if res.FailureType != runner.FailureSandboxDenied || res.BlockedPath != brief {
		t.Errorf("result %+v, want sandbox_denied on %s", res, brief)
	}
	if data, _ := os.ReadFile(brief); string(data) != "the brief\n" {
		t.Errorf("the attachment changed: %q", data)
	}
	var events []string
	for _, r := range testenv.ReadAudit(t, filepath.Join(dir, "audit.jsonl")) {
		events = append(events, r.Event+"/"+r.Source)
	}
	if got := strings.Join(events, ","); got != "start/,run/,denial/runner" {
		t.Errorf("audit events = %s", got)
	}
}

// TestFilesReadAttachment checks the Go API's file tools on an attached
// file: a worker restricted to src/ reads docs/brief.md through its
// attachment (CanRead and Read agree), and cannot write it.
func TestFilesReadAttachment(t *testing.T) {
	dir := newProjectDir(t)
	p, err := cordon.LoadProject(dir)
	if err != nil {
		t.Fatal(err)
	}
	brief := filepath.Join(dir, "docs", "brief.md")
	w, err := p.Worker(filepath.Join(dir, "workers", "src.worker.yaml"), cordon.Attach(brief))
	if err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if !files.CanRead(brief) || files.CanWrite(brief) {
		t.Errorf("CanRead(attachment) = %v, CanWrite = %v; want true, false", files.CanRead(brief), files.CanWrite(brief))
	}
	if got, err := files.Read(brief, 0); err != nil || got != "the brief\n" {
		t.Fatalf("Read(attachment) = %q, %v; want the brief", got, err)
	}
	if err := files.Write(brief, "overwritten\n"); !errors.Is(err, mounts.ErrReadOnly) {
		t.Errorf("Write(attachment) = %v, want ErrReadOnly", err)
	}
	if data, _ := os.ReadFile(brief); string(data) != "the brief\n" {
		t.Errorf("the attachment changed: %q", data)
	}
}
