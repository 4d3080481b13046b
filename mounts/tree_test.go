package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// mkTree builds a file tree under root from lines such as "dir a",
// "file a/b some content" (the rest of the line is the content) and
// "symlink c ../a", as filepath-securejoin's tests do. Parents are created as
// needed.
func mkTree(t testing.TB, root string, lines ...string) {
	t.Helper()
	for _, line := range lines {
		kind, rest, _ := strings.Cut(line, " ")
		name, arg, _ := strings.Cut(rest, " ")
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch kind {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			err = os.WriteFile(p, []byte(arg), 0o644)
		case "symlink":
			err = os.Symlink(arg, p)
		default:
			t.Fatalf("mkTree: unknown kind in %q", line)
		}
		if err != nil {
			t.Fatalf("mkTree %q: %v", line, err)
		}
	}
}

// fixture is the standard test sandbox:
//
//	base/ws        the workspace (rw), with secrets, links and a .git
//	base/vendorsrc mounted read-only at ws/vendor
//	base/cache     mounted read-only at /data (remapped), suffixes .json, 10 bytes max
//	base/deepsrc   mounted rw at ws/a/deep (longest prefix), with a denied secret.txt
//	base/outside   not mounted
type fixture struct {
	base, ws, outside string
	sb                *spec.Sandbox
}

func newFixture(t testing.TB, system spec.SystemKind) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mkTree(t, base,
		"file ws/a/b.txt hello",
		"dir ws/a/sub",
		"file ws/top.txt top",
		"file ws/.env SECRET",
		"file ws/secrets/key KEY",
		"file ws/.git/config [core]",
		"file ws/vendor/hidden.txt shadowed by the mount",
		"symlink ws/l-etc /etc",
		"symlink ws/l-root /root",
		"symlink ws/up ../../..",
		"symlink ws/l-out ../outside",
		"symlink ws/l-out-abs "+filepath.Join(base, "outside"),
		"symlink ws/rel a/sub",
		"symlink ws/loop1 loop2",
		"symlink ws/loop2 loop1",
		"symlink ws/self self",
		"symlink ws/l-env .env",
		"symlink ws/l-secrets secrets",
		"symlink ws/l-data /data",
		"symlink ws/l-hooks .git/hooks",
		"symlink ws/dangling a/new.txt",
		"file outside/o.txt OUTSIDE",
		"file vendorsrc/lib.go package lib",
		"file cache/file.json {}",
		"file cache/big.json 0123456789ABCDEF",
		"file cache/notes.txt notes",
		"symlink cache/abs /data/file.json",
		"symlink cache/hostabs "+filepath.Join(base, "cache", "file.json"),
		"symlink cache/esc ../../..",
		"file deepsrc/d.txt deep",
		"file deepsrc/secret.txt DEEPSECRET",
	)
	f.sb = &spec.Sandbox{
		Root: f.ws,
		Mounts: []spec.Mount{
			{Source: filepath.Join(base, "vendorsrc"), Target: filepath.Join(f.ws, "vendor"), Readonly: true, Name: "vendor"},
			{Source: filepath.Join(base, "cache"), Target: "/data", Readonly: true, Name: "cache",
				Suffixes: []string{".json"}, MaxFileBytes: 10},
			{Source: filepath.Join(base, "deepsrc"), Target: filepath.Join(f.ws, "a", "deep")},
		},
		Deny:    []string{filepath.Join(f.ws, ".env"), filepath.Join(f.ws, "secrets"), filepath.Join(f.ws, "a", "deep", "secret.txt")},
		Protect: []string{filepath.Join(f.ws, ".git", "hooks"), filepath.Join(f.ws, ".git", "config")},
		System:  spec.System{Kind: system},
	}
	return f
}

func (f *fixture) table(t testing.TB) *Table {
	t.Helper()
	tab, err := New(f.sb)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tab
}

// p joins names under the fixture's base directory.
func (f *fixture) p(names ...string) string {
	return filepath.Join(append([]string{f.base}, names...)...)
}

// skipUnlessCI skips t for a reason of this host, except under CI=true,
// where a missing capability is a failure.
func skipUnlessCI(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %s", reason)
	}
	t.Skip(reason)
}

// wantErr fails unless err matches want (nil meaning no error).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("error = %v, want %v", err, want)
	case want != nil:
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is not a *PathError", err)
		}
	}
}

// assertFile fails unless the host file p holds content.
func assertFile(t *testing.T, p, content string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	if string(b) != content {
		t.Fatalf("%s holds %q, want %q", p, b, content)
	}
}

// assertMissing fails if the host path p exists (without following it).
func assertMissing(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (err %v), want it absent", p, err)
	}
}

// assertNoTemp fails if a temporary file of Write is left in dir.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".cordon-") {
			t.Fatalf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}
