package mounts

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestErrorMessages checks that each error says what the sandbox allows
// instead, in full.
func TestErrorMessages(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	f.sb.System.Kind = spec.SystemHost
	tabHost := f.table(t)
	W := f.ws
	readable := "/data (ro), " + W + " (rw), " + W + "/a/deep (rw), " + W + "/vendor (ro)"
	writable := W + " (except " + W + "/.git/hooks, " + W + "/.git/config, " + W + "/.env, " + W + "/secrets, " + W + "/vendor); " + W + "/a/deep (except " + W + "/a/deep/secret.txt)"
	writable = strings.ReplaceAll(writable, "; ", ", ")
	rows := []struct {
		name string
		err  error
		want string
	}{
		{"outside", tab.Check("/etc/passwd", false),
			"cannot read /etc/passwd: outside the sandbox; readable: " + readable},
		{"protect", tab.Write(W+"/.git/hooks/x", "x"),
			"cannot write " + W + "/.git/hooks/x: protected path (" + W + "/.git/hooks); writable: " + writable},
		{"readonly", tab.Write("/data/file.json", "x"),
			"cannot write /data/file.json: read-only mount /data; writable: " + writable},
		{"readonly system", tabHost.Check("/etc/x", true),
			"cannot write /etc/x: read-only system directory /etc; writable: " + writable},
		{"denied", func() error { _, err := tab.Read(W+"/.env", 0); return err }(),
			"cannot read " + W + "/.env: denied by the sandbox's deny list; readable: " + readable + " (except denied paths)"},
		{"denied via link names the rule", tab.Check("l-env", false),
			"cannot read l-env: denied by the sandbox's deny list (" + W + "/.env); readable: " + readable + " (except denied paths)"},
		{"suffix", tab.CheckSuffix("/data/notes.txt"),
			"cannot read /data/notes.txt: file suffix not allowed under /data; allowed suffixes: .json"},
		{"too large", tab.CheckSize("/data/big.json"),
			"cannot read /data/big.json: 16 bytes is over the limit of 10 bytes (max_file_bytes of /data)"},
		{"NUL", tab.Check("a\x00b", false), `cannot read "a\x00b": invalid path: contains a NUL byte`},
		{"loop", tab.Check("loop1", false), "cannot read loop1: too many levels of symbolic links (more than 40)"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if row.err == nil {
				t.Fatal("no error")
			}
			if row.err.Error() != row.want {
				t.Fatalf("message\n got %s\nwant %s", row.err, row.want)
			}
		})
	}
}

// TestPathErrorData checks the fields callers use and the sentinels' Is.
func TestPathErrorData(t *testing.T) {
	f := newFixture(t, spec.SystemNone)
	tab := f.table(t)
	var pe *PathError
	if err := tab.Check("/etc/passwd", false); !errors.As(err, &pe) {
		t.Fatal(err)
	}
	if strings.Join(pe.Allowed, ", ") != strings.Join(tab.ReadableRoots(), ", ") || pe.Op != "read" || pe.Path != "/etc/passwd" {
		t.Fatalf("%+v", pe)
	}
	if errors.Is(pe, ErrDenied) || !errors.Is(pe, ErrOutsideSandbox) {
		t.Fatal("Is matches the wrong sentinel")
	}
	if err := tab.Check(filepath.Join(f.ws, ".git/config"), true); !errors.As(err, &pe) || pe.Rule != RuleProtect {
		t.Fatalf("%v", err)
	}
	if strings.Join(pe.Allowed, "; ") != strings.Join(tab.WritableRoots(), "; ") {
		t.Fatalf("Allowed %v", pe.Allowed)
	}
	long := tab.Check("/"+strings.Repeat("x", 5000), false)
	if !errors.Is(long, ErrInvalidPath) || len(long.Error()) > 400 {
		t.Fatalf("long path message (%d bytes): %.100s", len(long.Error()), long)
	}
}
