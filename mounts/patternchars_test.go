package mounts

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestPatternAtSourceWithPatternChars: a deny pattern written for a
// mount whose source holds pattern characters (/m, source up/s[1]*) holds
// at every other sandbox path of the same host files (/up/s[1]*/k.pem, a
// mount of the source's parent): the table matches the host files with the
// source escaped, as spec.WithAliases translates the pattern, so check and
// the file tools refuse what the kernel refuses. Files the pattern does not
// match stay readable.
func TestPatternAtSourceWithPatternChars(t *testing.T) {
	up := t.TempDir()
	src := filepath.Join(up, "s[1]*")
	if err := os.MkdirAll(filepath.Join(src, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"k.pem", "d/k2.pem", "ok.txt"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte("s"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := t.TempDir()
	sb := &spec.Sandbox{Root: ws, System: spec.System{Kind: spec.SystemNone}, Deny: []string{"/m/**/*.pem"},
		Mounts: []spec.Mount{{Source: src, Target: "/m"}, {Source: up, Target: "/up"}}}
	tbl, err := New(sb)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"/m/k.pem": false, "/m/d/k2.pem": false, "/up/s[1]*/k.pem": false, "/up/s[1]*/d/k2.pem": false,
		"/m/ok.txt": true, "/up/s[1]*/ok.txt": true,
	} {
		if got := tbl.CanRead(p); got != want {
			t.Errorf("CanRead(%s) = %v, want %v", p, got, want)
		}
		if _, err := tbl.Read(p, 100); (err == nil) != want {
			t.Errorf("Read(%s): %v, want allowed %v", p, err, want)
		}
	}
}
