package attach_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/internal/attach"
	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// parentFixture builds a parent sandbox: a workspace with a secret and
// symbolic links, a data zone with suffix and size rules, and a folder
// outside.
func parentFixture(t *testing.T) (base string, sb *spec.Sandbox) {
	t.Helper()
	base = t.TempDir()
	ws, data := filepath.Join(base, "ws"), filepath.Join(base, "data")
	writeFile(t, filepath.Join(ws, "docs", "a.md"), "alpha\n")
	writeFile(t, filepath.Join(ws, "docs", "b.md"), "bravo\n")
	writeFile(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	writeFile(t, filepath.Join(ws, ".env"), "TOKEN=1\n")
	writeFile(t, filepath.Join(data, "ok.json"), "{}\n")
	writeFile(t, filepath.Join(data, "big.json"), strings.Repeat("x", 100))
	writeFile(t, filepath.Join(data, "notes.txt"), "notes\n")
	writeFile(t, filepath.Join(base, "outside", "secret.txt"), "secret\n")
	for link, target := range map[string]string{"link.md": "docs/a.md", "up": "../outside", "etc": "/root"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Fatal(err)
		}
	}
	sb = &spec.Sandbox{
		Root:   ws,
		Mounts: []spec.Mount{{Source: data, Target: data, Name: "data", Suffixes: []string{".json"}, MaxFileBytes: 64}},
		Deny:   []string{filepath.Join(ws, ".env")},
		System: spec.System{Kind: spec.SystemHost},
	}
	return base, sb
}

func table(t *testing.T, sb *spec.Sandbox) *mounts.Table {
	t.Helper()
	tb, err := mounts.New(sb)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestResolveAccepts checks attachments the parent can read: each becomes a
// read-only mount of the resolved host file at its symlink-free sandbox
// path, duplicates once.
func TestResolveAccepts(t *testing.T) {
	base, sb := parentFixture(t)
	ws := sb.Root
	rows := []struct {
		name  string
		paths []string
		want  []string // targets
	}{
		{"relative", []string{"docs/a.md"}, []string{ws + "/docs/a.md"}},
		{"absolute", []string{ws + "/src/main.go"}, []string{ws + "/src/main.go"}},
		{"through a symlink inside", []string{"link.md"}, []string{ws + "/docs/a.md"}},
		{"duplicates once", []string{"docs/a.md", ws + "/docs/a.md", "link.md"}, []string{ws + "/docs/a.md"}},
		{"zone file", []string{base + "/data/ok.json"}, []string{base + "/data/ok.json"}},
		{"several", []string{"docs/a.md", "docs/b.md"}, []string{ws + "/docs/a.md", ws + "/docs/b.md"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			ms, err := attach.Resolve(table(t, sb), r.paths, attach.DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.Target)
				if !m.Readonly || m.Source != m.Target || m.Name != "" {
					t.Errorf("mount %+v: want read-only, unnamed, source = target (workspace paths are host paths)", m)
				}
			}
			if strings.Join(got, ",") != strings.Join(r.want, ",") {
				t.Errorf("targets = %v, want %v", got, r.want)
			}
		})
	}
}

// TestResolveRefuses checks each refusal: its sentinel, its rule and a
// message that says what IS allowed.
func TestResolveRefuses(t *testing.T) {
	base, sb := parentFixture(t)
	ws := sb.Root
	many := func(n int) []string {
		var out []string
		for i := 0; i < n; i++ {
			p := filepath.Join(ws, "many", strings.Repeat("f", i+1)+".txt")
			writeFile(t, p, "x")
			out = append(out, p)
		}
		return out
	}
	rows := []struct {
		name   string
		paths  []string
		policy attach.Policy
		is     error
		also   error // a mounts sentinel the error matches too, or nil
		rule   string
		want   []string
	}{
		{"outside the parent", []string{base + "/outside/secret.txt"}, attach.Policy{}, attach.ErrOutside, mounts.ErrOutsideSandbox, attach.RuleOutside,
			[]string{"outside the parent's sandbox", "the parent can read: ", ws + " (rw)"}},
		{"traversal", []string{"../outside/secret.txt"}, attach.Policy{}, attach.ErrOutside, mounts.ErrOutsideSandbox, attach.RuleOutside,
			[]string{"the parent can read: "}},
		{"symlink out (relative)", []string{"up/secret.txt"}, attach.Policy{}, attach.ErrOutside, mounts.ErrOutsideSandbox, attach.RuleOutside,
			[]string{"the parent can read: "}},
		{"symlink out (absolute)", []string{"etc/.bashrc"}, attach.Policy{}, attach.ErrOutside, mounts.ErrOutsideSandbox, attach.RuleOutside,
			[]string{"the parent can read: "}},
		{"denied", []string{".env"}, attach.Policy{}, attach.ErrOutside, mounts.ErrDenied, attach.RuleDeny,
			[]string{"deny list", "the parent can read: "}},
		{"host secret", []string{"/etc/shadow"}, attach.Policy{}, attach.ErrOutside, mounts.ErrDenied, attach.RuleDeny,
			[]string{"deny list"}},
		{"directory", []string{"docs"}, attach.Policy{}, attach.ErrNotFile, nil, attach.RuleNotFile, []string{"is a directory"}},
		{"missing", []string{"docs/none.md"}, attach.Policy{}, attach.ErrNotFile, nil, attach.RuleNotFile, []string{"does not exist"}},
		{"zone suffix", []string{base + "/data/notes.txt"}, attach.Policy{}, attach.ErrSuffix, mounts.ErrSuffix, attach.RuleSuffix,
			[]string{"allowed suffixes: .json"}},
		{"zone size", []string{base + "/data/big.json"}, attach.Policy{}, attach.ErrSize, mounts.ErrTooLarge, attach.RuleFileSize,
			[]string{"100 bytes is over the limit of 64 bytes"}},
		{"policy suffix", []string{"src/main.go"}, attach.Policy{Suffixes: []string{".md"}}, attach.ErrSuffix, nil, attach.RuleSuffix,
			[]string{"allows only the suffixes .md"}},
		{"count", many(3), attach.Policy{MaxCount: 2}, attach.ErrCount, nil, attach.RuleCount, []string{"3 attachments given, but at most 2"}},
		{"default count", many(17), attach.Policy{}, attach.ErrCount, nil, attach.RuleCount, []string{"17 attachments given, but at most 16"}},
		{"total size", []string{"docs/a.md", "docs/b.md"}, attach.Policy{MaxBytes: 11}, attach.ErrSize, nil, attach.RuleTotalSize,
			[]string{"12 bytes in total, over the limit of 11 bytes"}},
		{"invalid path", []string{"docs/a.md\x00"}, attach.Policy{}, attach.ErrOutside, mounts.ErrInvalidPath, attach.RuleOutside,
			[]string{"cannot resolve it"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			ms, err := attach.Resolve(table(t, sb), r.paths, r.policy)
			if err == nil {
				t.Fatalf("accepted: %+v", ms)
			}
			if ms != nil {
				t.Errorf("mounts returned with an error: %+v", ms)
			}
			if !errors.Is(err, r.is) {
				t.Errorf("error %v does not match %v", err, r.is)
			}
			if r.also != nil && !errors.Is(err, r.also) {
				t.Errorf("error %v does not match %v", err, r.also)
			}
			var ae *attach.Error
			if !errors.As(err, &ae) || ae.Rule != r.rule {
				t.Errorf("rule = %+v, want %s", ae, r.rule)
			}
			for _, w := range r.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestResolveReportsAll checks that every refusal is reported at once.
func TestResolveReportsAll(t *testing.T) {
	base, sb := parentFixture(t)
	_, err := attach.Resolve(table(t, sb), []string{".env", base + "/outside/secret.txt", "docs", "docs/a.md"}, attach.DefaultPolicy())
	for _, is := range []error{attach.ErrOutside, attach.ErrNotFile} {
		if !errors.Is(err, is) {
			t.Errorf("%v does not report %v", err, is)
		}
	}
	if n := strings.Count(err.Error(), "cannot attach"); n != 3 {
		t.Errorf("%d refusals reported, want 3:\n%v", n, err)
	}
}

// TestApplyShowsAttachmentsReadOnly checks that a child with no workspace
// (a pure function) can read an attachment and cannot write it.
func TestApplyShowsAttachmentsReadOnly(t *testing.T) {
	_, sb := parentFixture(t)
	ms, err := attach.Resolve(table(t, sb), []string{"docs/a.md"}, attach.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	child, err := spec.Derive(sb, &spec.Worker{Name: "pure"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := attach.Apply(child, ms)
	if err != nil {
		t.Fatal(err)
	}
	if len(child.Mounts) != 0 {
		t.Errorf("Apply modified its input: %+v", child.Mounts)
	}
	ct := table(t, got)
	target := sb.Root + "/docs/a.md"
	if !ct.CanRead(target) || ct.CanWrite(target) {
		t.Errorf("child: CanRead %v CanWrite %v, want read-only", ct.CanRead(target), ct.CanWrite(target))
	}
	if ct.CanRead(sb.Root + "/docs/b.md") {
		t.Errorf("the child sees a file that was not attached")
	}
}

// TestApplyRefuses checks that the child's deny list wins over an
// attachment and that a target in use is refused.
func TestApplyRefuses(t *testing.T) {
	base, sb := parentFixture(t)
	ms, err := attach.Resolve(table(t, sb), []string{"docs/a.md"}, attach.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	denied := sb.Clone()
	denied.Deny = append(denied.Deny, sb.Root+"/docs")
	clash := sb.Clone()
	clash.Root = ""
	clash.Mounts = append(clash.Mounts, spec.Mount{Source: base + "/data/ok.json", Target: sb.Root + "/docs/a.md"})
	for name, child := range map[string]*spec.Sandbox{"child deny": denied, "target in use": clash} {
		t.Run(name, func(t *testing.T) {
			got, err := attach.Apply(child, ms)
			if !errors.Is(err, attach.ErrChild) || got != nil {
				t.Fatalf("Apply = %v, %v; want ErrChild", got, err)
			}
		})
	}
}
