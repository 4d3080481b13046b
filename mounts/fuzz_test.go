package mounts

import (
	"errors"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// FuzzResolve checks that resolution never panics and that every host path
// it returns lies under some entry's Source and under no deny path; for a
// write, also in a writable entry and under no protect path.
func FuzzResolve(f *testing.F) {
	fx := newFixture(f, spec.SystemNone)
	tabs := []*Table{fx.table(f)}
	fx.sb.System.Kind = spec.SystemHost
	tabs = append(tabs, fx.table(f))
	ws := fx.ws
	for _, s := range []string{
		"a/b.txt", "..", "../..", "/", "//", ws + "//a/", ws + "/up/x", ws + "/l-etc/passwd", ws + "/l-etc/shadow",
		ws + "/l-root/x", ws + "/rel/../b.txt", ws + "/loop1", ws + "/.env", ws + "/l-env", ws + "/l-secrets/key",
		"/data/esc/..", "/data/hostabs", ws + "/a/deep/../../.git/hooks/x", "l-hooks/x", "\x00", "",
		strings.Repeat("../", 100) + "etc/passwd", "/tmp/x", "/proc/self/root/etc", ws + "/vendor/../.env",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		for _, tab := range tabs {
			for _, write := range []bool{false, true} {
				var host string
				var err error
				if write {
					host, err = tab.ResolveWrite(path)
				} else {
					host, err = tab.Resolve(path)
				}
				if err != nil {
					var pe *PathError
					if !errors.As(err, &pe) {
						t.Fatalf("Resolve(%q): %v is not a *PathError", path, err)
					}
					continue
				}
				var in *Entry
				for i := range tab.entries {
					e := &tab.entries[i]
					if isUnder(host, e.Source) && (in == nil || len(e.Source) > len(in.Source)) {
						in = e
					}
				}
				if in == nil {
					t.Fatalf("Resolve(%q) = %q, under no entry's Source", path, host)
				}
				for _, d := range append(append([]string(nil), tab.denyCfg...), tab.denyH...) {
					if isUnder(host, d) {
						t.Fatalf("Resolve(%q) = %q, under deny path %s", path, host, d)
					}
				}
				if !write {
					continue
				}
				if !tab.CanRead(path) {
					t.Fatalf("%q writable but not readable", path)
				}
				for _, p := range append(append([]string(nil), tab.protectCfg...), tab.protectH...) {
					if isUnder(host, p) {
						t.Fatalf("ResolveWrite(%q) = %q, under protect path %s", path, host, p)
					}
				}
				for _, e := range tab.entries {
					if e.Readonly && isUnder(host, e.Source) && !nestedWritable(tab, host, e) {
						t.Fatalf("ResolveWrite(%q) = %q, in read-only %s", path, host, e.Target)
					}
				}
			}
		}
	})
}

// nestedWritable reports whether host lies in a writable entry nested more
// deeply than the read-only entry ro (a rw mount inside a ro one).
func nestedWritable(tab *Table, host string, ro Entry) bool {
	for _, e := range tab.entries {
		if !e.Readonly && isUnder(host, e.Source) && len(e.Source) > len(ro.Source) {
			return true
		}
	}
	return false
}
