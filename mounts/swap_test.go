package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// setHook installs fn as the hook between check and open for one test.
func setHook(t *testing.T, fn func(op, hostPath string)) {
	t.Helper()
	testHookBeforeOpen = fn
	t.Cleanup(func() { testHookBeforeOpen = nil })
}

// swap replaces the host path p by a symbolic link to target.
func swap(t *testing.T, p, target string) {
	t.Helper()
	if err := os.Rename(p, p+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// TestSwapAfterCheckRead is the TOCTOU property of Read: a symbolic link
// swapped in after the path was checked makes Read fail with ErrChanged,
// and the denied or outside content is not returned.
func TestSwapAfterCheckRead(t *testing.T) {
	rows := []struct {
		name   string
		path   string
		swapAt string // relative to base
		target func(f *fixture) string
		secret string
	}{
		{"file to denied file", "a/b.txt", "ws/a/b.txt", func(f *fixture) string { return "../.env" }, "SECRET"},
		{"file to outside file", "a/b.txt", "ws/a/b.txt", func(f *fixture) string { return f.p("outside/o.txt") }, "OUTSIDE"},
		{"dir to outside dir", "a/b.txt", "ws/a", func(f *fixture) string { return f.p("outside") }, "OUTSIDE-B"},
		{"dir to denied dir", "a/b.txt", "ws/a", func(f *fixture) string { return "secrets" }, "KEY"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			f := newFixture(t, spec.SystemNone)
			mkTree(t, f.base, "file outside/b.txt OUTSIDE-B", "file ws/secrets/b.txt KEY")
			tab := f.table(t)
			setHook(t, func(op, host string) { swap(t, f.p(row.swapAt), row.target(f)) })
			got, err := tab.Read(row.path, 0)
			wantErr(t, err, ErrChanged)
			if strings.Contains(got, row.secret) {
				t.Fatalf("Read returned %q", got)
			}
			if !strings.Contains(err.Error(), "nothing was read") {
				t.Fatalf("message %q", err)
			}
		})
	}
}

// TestSwapAfterCheckWrite is the TOCTOU property of Write: a symbolic link
// swapped in after the check makes Write fail with ErrChanged, nothing is
// written through it, and no temporary file is left behind.
func TestSwapAfterCheckWrite(t *testing.T) {
	rows := []struct {
		name    string
		path    string
		swapAt  string
		target  func(f *fixture) string
		outside string // host file that must stay as it was ("" = must not exist)
		content string
	}{
		{"file to outside file", "a/b.txt", "ws/a/b.txt", func(f *fixture) string { return f.p("outside/o.txt") }, "outside/o.txt", "OUTSIDE"},
		{"file to denied file", "a/b.txt", "ws/a/b.txt", func(f *fixture) string { return "../.env" }, "ws/.env", "SECRET"},
		{"dir to outside dir", "a/new.txt", "ws/a", func(f *fixture) string { return f.p("outside") }, "outside/new.txt", ""},
		{"dir to protected dir", "a/config", "ws/a", func(f *fixture) string { return ".git" }, "ws/.git/config", "[core]"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			f := newFixture(t, spec.SystemNone)
			tab := f.table(t)
			setHook(t, func(op, host string) { swap(t, f.p(row.swapAt), row.target(f)) })
			err := tab.Write(row.path, "PWNED")
			wantErr(t, err, ErrChanged)
			if !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("message %q", err)
			}
			if row.content == "" {
				assertMissing(t, f.p(row.outside))
			} else {
				assertFile(t, f.p(row.outside), row.content)
			}
			assertNoTemp(t, f.p("ws/a"))
			assertNoTemp(t, f.p("ws/a.moved"))
			assertNoTemp(t, f.p("outside"))
		})
	}
}

// TestSwapToRealDirIsSafe checks the other outcome of a race: when a real
// directory (not a link) replaces a checked one, Read reads the file that
// is at the checked path now, which is inside the same mount.
func TestSwapToRealDirIsSafe(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	setHook(t, func(op, host string) {
		if err := os.Rename(f.p("ws/a"), f.p("ws/a.old")); err != nil {
			t.Fatal(err)
		}
		mkTree(t, f.base, "file ws/a/b.txt replaced")
	})
	got, err := tab.Read("a/b.txt", 0)
	if err != nil || got != "replaced" {
		t.Fatalf("Read = %q, %v", got, err)
	}
}

// TestCheckDoesNotTouch checks that refused checks have no side effect and
// that resolution never looks at a denied or outside path.
func TestCheckDoesNotTouch(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	// Replace the denied file by a loop: if the walk looked at it, the
	// error would be ErrLoop instead of ErrDenied.
	if err := os.Remove(f.p("ws/.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".env", f.p("ws/.env")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, tab.Check(".env/x", false), ErrDenied)
	if _, err := tab.ResolveWrite(".git/hooks/x"); !errors.Is(err, ErrReadOnly) {
		t.Fatal(err)
	}
	assertMissing(t, filepath.Join(f.ws, ".git/hooks"))
}
