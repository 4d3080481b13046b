package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

func TestRead(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	rows := []struct {
		name, path string
		max        int
		want       string
		err        error
	}{
		{"plain", "a/b.txt", 0, "hello", nil},
		{"through link", f.ws + "/l-data/file.json", 0, "{}", nil},
		{"nested mount", f.ws + "/a/deep/d.txt", 0, "deep", nil},
		{"cut", "a/b.txt", 2, "he\n[cordon: cut after 2 characters; the file has 5 bytes]", nil},
		{"exact length not cut", "a/b.txt", 5, "hello", nil},
		{"denied", ".env", 0, "", ErrDenied},
		{"denied in rw mount", "a/deep/secret.txt", 0, "", ErrDenied},
		{"denied via link", "l-env", 0, "", ErrDenied},
		{"outside via link", "l-out/o.txt", 0, "", ErrOutsideSandbox},
		{"suffix", "/data/notes.txt", 0, "", ErrSuffix},
		{"too large", "/data/big.json", 0, "", ErrTooLarge},
		{"directory", "a", 0, "", ErrNotFile},
		{"mount root", "/data", 0, "", ErrNotFile},
		{"missing", "a/none.txt", 0, "", os.ErrNotExist},
		{"loop", "loop1", 0, "", ErrLoop},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, err := tab.Read(row.path, row.max)
			if row.err != nil {
				if !errors.Is(err, row.err) {
					t.Fatalf("error = %v, want %v", err, row.err)
				}
				if got != "" {
					t.Fatalf("content %q returned with an error", got)
				}
				return
			}
			if err != nil || got != row.want {
				t.Fatalf("Read = %q, %v; want %q", got, err, row.want)
			}
		})
	}
}

// TestReadRunes checks that maxChars counts characters, not bytes, and
// never splits one.
func TestReadRunes(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "file ws/u.txt héllo wörld")
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.Read("u.txt", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "héllo w\n[cordon: cut after 7 characters") {
		t.Fatalf("Read = %q", got)
	}
	got, err = tab.Read("u.txt", 11)
	if err != nil || got != "héllo wörld" {
		t.Fatalf("Read = %q, %v", got, err)
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)

	t.Run("new file with parents", func(t *testing.T) {
		wantErr(t, tab.Write("n1/n2/new.txt", "fresh"), nil)
		assertFile(t, f.p("ws/n1/n2/new.txt"), "fresh")
		assertNoTemp(t, f.p("ws/n1/n2"))
	})
	t.Run("nested rw mount", func(t *testing.T) {
		wantErr(t, tab.Write(f.ws+"/a/deep/x.txt", "in deep"), nil)
		assertFile(t, f.p("deepsrc/x.txt"), "in deep")
		assertMissing(t, f.p("ws/a/deep/x.txt"))
	})
	t.Run("through dangling link", func(t *testing.T) {
		wantErr(t, tab.Write("dangling", "made"), nil)
		assertFile(t, f.p("ws/a/new.txt"), "made")
		if fi, err := os.Lstat(f.p("ws/dangling")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatal("the link itself was replaced")
		}
	})
	t.Run("directory path", func(t *testing.T) {
		wantErr(t, tab.Write("a/", "x"), ErrNotFile)
		wantErr(t, tab.Write("a", "x"), ErrNotFile)
		wantErr(t, tab.Write(f.ws, "x"), ErrNotFile)
	})
}

// TestWriteAtomicKeepsMode checks that Write replaces the file by rename
// (an old hard link and an open descriptor keep the old content) and keeps
// its permission bits.
func TestWriteAtomicKeepsMode(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	target := f.p("ws/top.txt")
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(target, f.p("ws-old-link")); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(target)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	wantErr(t, tab.Write("top.txt", "replaced"), nil)

	assertFile(t, target, "replaced")
	assertFile(t, f.p("ws-old-link"), "top")
	buf := make([]byte, 16)
	n, _ := old.Read(buf)
	if string(buf[:n]) != "top" {
		t.Fatalf("open descriptor sees %q: the file was rewritten in place", buf[:n])
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	assertNoTemp(t, f.ws)
}

// TestWriteRefusals is the security property of Write: each refusal returns
// its error AND leaves the file system as it was.
func TestWriteRefusals(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	rows := []struct {
		name, path string
		err        error
		check      func(t *testing.T)
	}{
		{"denied file unchanged", ".env", ErrDenied, func(t *testing.T) { assertFile(t, f.p("ws/.env"), "SECRET") }},
		{"denied via link unchanged", "l-env", ErrDenied, func(t *testing.T) { assertFile(t, f.p("ws/.env"), "SECRET") }},
		{"denied dir not written", "secrets/new", ErrDenied, func(t *testing.T) { assertMissing(t, f.p("ws/secrets/new")) }},
		{"denied in rw mount unchanged", "a/deep/secret.txt", ErrDenied, func(t *testing.T) { assertFile(t, f.p("deepsrc/secret.txt"), "DEEPSECRET") }},
		{"protect existing unchanged", ".git/config", ErrReadOnly, func(t *testing.T) { assertFile(t, f.p("ws/.git/config"), "[core]") }},
		{"protect missing not created", ".git/hooks/pre-commit", ErrReadOnly, func(t *testing.T) { assertMissing(t, f.p("ws/.git/hooks")) }},
		{"protect via link not created", "l-hooks/post", ErrReadOnly, func(t *testing.T) { assertMissing(t, f.p("ws/.git/hooks")) }},
		{"ro mount unchanged", "vendor/lib.go", ErrReadOnly, func(t *testing.T) { assertFile(t, f.p("vendorsrc/lib.go"), "package lib") }},
		{"ro remapped not created", "/data/new.json", ErrReadOnly, func(t *testing.T) { assertMissing(t, f.p("cache/new.json")) }},
		{"outside via link not created", "l-out/new.txt", ErrOutsideSandbox, func(t *testing.T) { assertMissing(t, f.p("outside/new.txt")) }},
		{"outside via link unchanged", "l-out-abs/o.txt", ErrOutsideSandbox, func(t *testing.T) { assertFile(t, f.p("outside/o.txt"), "OUTSIDE") }},
		{"dotdot escape not created", "../outside/x", ErrOutsideSandbox, func(t *testing.T) { assertMissing(t, f.p("outside/x")) }},
		{"loop", "loop1", ErrLoop, func(t *testing.T) { assertMissing(t, f.p("ws/loop3")) }},
		{"NUL", "ab.txt\x00", ErrInvalidPath, func(t *testing.T) { assertMissing(t, f.p("ws/ab.txt")) }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			wantErr(t, tab.Write(row.path, "PWNED"), row.err)
			row.check(t)
			assertNoTemp(t, f.ws)
		})
	}
}

// TestWriteSuffixAndSize checks the application-level policy of a mount.
func TestWriteSuffixAndSize(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "dir ws", "dir cache")
	tab, err := New(&spec.Sandbox{Root: filepath.Join(base, "ws"), Mounts: []spec.Mount{{
		Source: filepath.Join(base, "cache"), Target: "/cache", Suffixes: []string{".json", ".txt"}, MaxFileBytes: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	err = tab.Write("/cache/x.bin", "1")
	wantErr(t, err, ErrSuffix)
	assertMissing(t, filepath.Join(base, "cache/x.bin"))
	err = tab.Write("/cache/.json", "1")
	wantErr(t, err, ErrSuffix)
	err = tab.Write("/cache/x.json", "12345")
	wantErr(t, err, ErrTooLarge)
	assertMissing(t, filepath.Join(base, "cache/x.json"))
	var pe *PathError
	if !errors.As(err, &pe) || pe.Size != 5 || pe.Limit != 4 {
		t.Fatalf("PathError %+v", pe)
	}
	wantErr(t, tab.Write("/cache/x.json", "1234"), nil)
	assertFile(t, filepath.Join(base, "cache/x.json"), "1234")
	wantErr(t, tab.CheckSuffix("/cache/x.json"), nil)
	wantErr(t, tab.CheckSuffix("/cache/y.bin"), ErrSuffix)
	wantErr(t, tab.CheckSize("/cache/x.json"), nil)
	wantErr(t, tab.CheckSize("/cache/missing.json"), nil)
	if err := os.WriteFile(filepath.Join(base, "cache/big.txt"), []byte("12345678"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tab.CheckSize("/cache/big.txt"), ErrTooLarge)
	wantErr(t, tab.CheckSuffix("anything.bin"), nil) // the workspace has no suffix list
}

func TestList(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	rel := func(paths []string) string {
		var out []string
		for _, p := range paths {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, f.ws), "/"))
		}
		return strings.Join(out, " ")
	}
	rows := []struct{ name, path, pattern, want string }{
		{"top level", f.ws, "", ".git a dangling l-data l-env l-etc l-hooks l-out l-out-abs l-root l-secrets loop1 loop2 rel self top.txt up vendor"},
		{"recursive txt", f.ws, "**/*.txt", "a/b.txt a/deep/d.txt top.txt"},
		{"mount contents replace host dir", "vendor", "**", "vendor/lib.go"},
		{"one level", "a", "*", "a/b.txt a/deep a/sub"},
		{"two segments", f.ws, "a/*", "a/b.txt a/deep a/sub"},
		{"symlinked dir not followed", f.ws, "rel/*", ""},
		{"list through a link", "rel/..", "*.txt", "a/b.txt"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, err := tab.List(row.path, row.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if rel(got) != row.want {
				t.Fatalf("List = %q\nwant   %q", rel(got), row.want)
			}
		})
	}
	t.Run("remapped mount", func(t *testing.T) {
		got, err := tab.List("/data", "*.json")
		if err != nil || strings.Join(got, " ") != "/data/big.json /data/file.json" {
			t.Fatalf("List = %v, %v", got, err)
		}
	})
	t.Run("denied never listed", func(t *testing.T) {
		got, err := tab.List(f.ws, "**")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got {
			if strings.HasSuffix(p, "/.env") || strings.Contains(p, "/secrets/") || strings.HasSuffix(p, "/secrets") ||
				strings.HasSuffix(p, "hidden.txt") {
				t.Fatalf("List shows %s", p)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		_, err := tab.List("secrets", "*")
		wantErr(t, err, ErrDenied)
		_, err = tab.List("l-out", "*")
		wantErr(t, err, ErrOutsideSandbox)
		_, err = tab.List(f.ws, "/abs")
		if err == nil {
			t.Fatal("absolute pattern accepted")
		}
		_, err = tab.List(f.ws, "[")
		if err == nil {
			t.Fatal("bad pattern accepted")
		}
		_, err = tab.List("top.txt", "*")
		if !errors.Is(err, syscall.ENOTDIR) {
			t.Fatalf("List of a file: %v", err)
		}
	})
}

// TestListScaffoldAndMountPoints checks that List walks the sandbox
// namespace: mount points beneath the listed directory appear even when the
// host has no directory there.
func TestListScaffoldAndMountPoints(t *testing.T) {
	base := t.TempDir()
	mkTree(t, base, "file ws/x", "file m/inner.txt in", "file ws/sub/y")
	ws := filepath.Join(base, "ws")
	tab, err := New(&spec.Sandbox{Root: ws, Mounts: []spec.Mount{{Source: filepath.Join(base, "m"), Target: ws + "/virt/deeper/m"}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.List(ws, "**")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ws + "/sub", ws + "/sub/y", ws + "/virt", ws + "/virt/deeper", ws + "/virt/deeper/m", ws + "/virt/deeper/m/inner.txt", ws + "/x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("List = %v\nwant   %v", got, want)
	}
}

// TestListCap checks that List stops at MaxListResults and says so. The
// matches come from one directory of 101 files mounted 100 times, which is
// cheaper to build than 10001 files.
func TestListCap(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	ws := filepath.Join(base, "ws")
	mkTree(t, base, "dir ws", "dir src")
	for i := 0; i <= 100; i++ {
		if err := os.WriteFile(filepath.Join(src, "f"+itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb := &spec.Sandbox{Root: ws}
	for i := 0; i < 100; i++ {
		sb.Mounts = append(sb.Mounts, spec.Mount{Source: src, Target: filepath.Join(ws, "m"+itoa(i))})
	}
	tab, err := New(sb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tab.List(ws, "**")
	wantErr(t, err, ErrTooMany)
	if len(got) != MaxListResults {
		t.Fatalf("%d results", len(got))
	}
	if !strings.Contains(err.Error(), "more than 10000 matches") {
		t.Fatalf("message %q", err)
	}
	got, err = tab.List(ws, "m1/*")
	if err != nil || len(got) != 101 {
		t.Fatalf("List m1/* = %d results, %v", len(got), err)
	}
}

func TestMatchSegs(t *testing.T) {
	rows := []struct {
		pat, name string
		want      bool
	}{
		{"*", "a", true},
		{"*", "a/b", false},
		{"**", "a/b/c", true},
		{"**/*.go", "x.go", true},
		{"**/*.go", "a/b/x.go", true},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "b/z", false},
		{"*.txt", "a.go", false},
	}
	for _, row := range rows {
		segs, err := splitPattern(row.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := matchSegs(segs, strings.Split(row.name, "/")); got != row.want {
			t.Errorf("match(%q, %q) = %v", row.pat, row.name, got)
		}
	}
}

// TestResourceCaps: a pattern with many ** (exponential matching), a huge
// max_chars and a write over limits.file_size are refused or capped before
// they cost the caller unbounded time or memory.
func TestResourceCaps(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, "dir a", "file a/f")
	tab, err := New(&spec.Sandbox{Root: ws, Limits: spec.Limits{FileSize: 8}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tab.List(ws, "**/*/**/*/**/*/zz")
	if err == nil || !strings.Contains(err.Error(), "at most 2") {
		t.Fatalf("three ** segments: want a refusal, got %v", err)
	}
	if _, err := tab.List(ws, "**/a/**/f"); err != nil {
		t.Fatalf("two ** segments must work: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a/f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tab.Read(filepath.Join(ws, "a/f"), 1<<62)
	if err != nil || got != "hello" {
		t.Fatalf("a huge max_chars must be capped, not overflow: %q %v", got, err)
	}
	err = tab.Write(filepath.Join(ws, "a/big"), "123456789")
	wantErr(t, err, ErrTooLarge)
	assertMissing(t, filepath.Join(ws, "a/big"))
	if !strings.Contains(err.Error(), "limits.file_size") {
		t.Fatalf("message %q", err)
	}
}

// TestWriteGitLink: the Write tool refuses a .git file that points git at
// a directory whose hooks, config or commondir no rule protects (as the
// Linux broker does), and writes one that points at protected metadata.
func TestWriteGitLink(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	for _, row := range []struct{ content, why string }{
		{"gitdir: ../evil\n", "an unprotected directory"},
		{"gitdir: " + f.p("ws/evil") + "\n", "an unprotected directory, absolute"},
		{"gitdir: /tmp\n", "outside the sandbox"},
	} {
		wantErr(t, tab.Write("sub/.git", row.content), ErrReadOnly)
		assertMissing(t, f.p("ws/sub/.git"))
	}
	// .git/hooks and .git/config are protected in the fixture; commondir
	// is not, so a redirect to .git itself is refused too.
	wantErr(t, tab.Write("sub/.git", "gitdir: ../.git\n"), ErrReadOnly)
	if err := tab.Write("sub/.git", "not a redirect"); err != nil {
		t.Fatalf("a .git file with no redirect: %v", err)
	}
}
