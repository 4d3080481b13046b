package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPatternMatching(t *testing.T) {
	tests := []struct {
		rule, path   string
		under, below bool
	}{
		{"/w/**/.git/hooks", "/w/.git/hooks", true, true},
		{"/w/**/.git/hooks", "/w/a/b/.git/hooks/pre-commit", true, true},
		{"/w/**/.git/hooks", "/w/a/.git/HEAD", false, true}, // HEAD/.git/hooks could be made
		{"/w/**/.git/hooks", "/w/a", false, true},
		{"/w/**/.git/hooks", "/other/.git/hooks", false, false},
		{"/w/**/*.pem", "/w/keys/a.pem", true, true},
		{"/w/**/*.pem", "/w/keys/a.pem.txt", false, true},
		{"/w/**/.git/modules/**/config", "/w/.git/modules/m/config", true, true},
		{"/w/**/.git/modules/**/config", "/w/.git/modules/a/b/config", true, true},
		{"/w/**/.git/modules/**/config", "/w/.git/modules/m/HEAD", false, true},
		{"/w/**/.git/worktrees/*/commondir", "/w/.git/worktrees/x/commondir", true, true},
		{"/w/**/.git/worktrees/*/commondir", "/w/.git/worktrees/x/y/commondir", false, true},
		{"/w/.env", "/w/.env", true, true},
		{"/w/.git", "/w/.git/config", true, true},
		{"/w/.git/hooks", "/w", false, true},
		{"/w/.git/hooks", "/w/src", false, false},
	}
	for _, tt := range tests {
		if got := MatchUnder(tt.rule, tt.path); got != tt.under {
			t.Errorf("MatchUnder(%s, %s) = %v, want %v", tt.rule, tt.path, got, tt.under)
		}
		if got := MayMatchBelow(tt.rule, tt.path); got != tt.below {
			t.Errorf("MayMatchBelow(%s, %s) = %v, want %v", tt.rule, tt.path, got, tt.below)
		}
	}
	for p, want := range map[string]string{
		"/w/**/.env": "", "/w/a**": "whole path component", "/w/[a": "not a valid pattern", "/**/x": "start below a directory",
	} {
		if got := patternProblem(p); (want == "") != (got == "") || (want != "" && !contains(got, want)) {
			t.Errorf("patternProblem(%s) = %q, want %q", p, got, want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestPatternDenyMatchesAtStartMasked: a deny pattern's matches that exist
// when the spec is built are masked like deny paths (a file gets the
// /dev/null cover); the pattern itself gives no mount.
func TestPatternDenyMatchesAtStartMasked(t *testing.T) {
	ws := t.TempDir()
	for _, f := range []string{".env", "a/b/.env", "keys/x.pem"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb := &Sandbox{Root: ws, System: System{Kind: SystemNone},
		Deny: []string{ws + "/**/.env", ws + "/**/*.pem"}, Protect: []string{ws + "/**/.git/hooks"}}
	s, err := toOCI(sb, Process{Args: []string{"true"}}, RunOptions{Rootfs: "/run/x"}, ociGoldenHost())
	if err != nil {
		t.Fatal(err)
	}
	var covered []string
	for _, m := range s.Mounts {
		if m.Source == "/dev/null" {
			covered = append(covered, m.Destination)
		}
		if IsPattern(m.Destination) {
			t.Errorf("a mount at the pattern %s", m.Destination)
		}
	}
	covered = append(covered, s.Linux.MaskedPaths...) // the golden host's lstat knows none of them
	for _, f := range []string{".env", "a/b/.env", "keys/x.pem"} {
		if !slices.Contains(covered, filepath.Join(ws, f)) {
			t.Errorf("%s is not covered: %v", f, covered)
		}
	}
	if slices.ContainsFunc(s.Linux.ReadonlyPaths, IsPattern) || slices.ContainsFunc(s.Linux.MaskedPaths, IsPattern) {
		t.Errorf("a pattern reached the spec: ro %v masked %v", s.Linux.ReadonlyPaths, s.Linux.MaskedPaths)
	}
}

// TestCompiledRuleMatchesMatchUnder: a compiled entry answers as
// MatchUnder for every pair of entry and path.
func TestCompiledRuleMatchesMatchUnder(t *testing.T) {
	rules := []string{
		"/w/**/.git/hooks", "/w/**/*.pem", "/w/**/.git/modules/**/config", "/w/**/.git/worktrees/*/commondir",
		"/w/.env", "/w/.git", "/w/.git/hooks", "/", "/w/", "/w/a*/b", "/w/[ab]/c", "/w/?", "/w/x/**",
		`/w/**/a\b`, "/w/**/.git/**", "/w/**/x/**/x", "/w/**/*.code-workspace", "/w/**/x?y*zz.txt", "/w/*/*.pem",
	}
	paths := []string{
		"/", "/w", "/w/", "/wx", "/w/.git", "/w/.git/hooks", "/w/.git/hooks/pre-commit", "/w/a/b/.git/hooks/x",
		"/w/a/.git/HEAD", "/other/.git/hooks", "/w/keys/a.pem", "/w/keys/a.pem.txt", "/w/.git/modules/m/config",
		"/w/.git/modules/a/b/config", "/w/.git/worktrees/x/commondir", "/w/.git/worktrees/x/y/commondir",
		"/w/.env", "/w/.envx", "/w/ab/b", "/w/a/c", "/w/c/c", "/w/z", "/w/zz", "/w/x", "/w/x/y/z",
		"/w//a.pem", "/w/ab", `/w/a\b`, "/w/q/ab", "/w/x/x", "/w/xx/x", "/w/x/a/x/b", "/w/.gitx/hooks", "/w/a.git/hooks",
		"/w/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z/1/2/3/4/5/6/7/8/.git/hooks",
		"/w/a/b.code-workspace", "/w/a.code-workspace/x", "/w/.code-workspace", "/w/code-workspace", "/w/q/xAyBzz.txt",
		"/w/q/xyzz.txt", "/w/q/xAyzz.txt/in", "/w/k/.pem", "/w/k/l/a.pem",
	}
	for _, r := range rules {
		c := CompileRule(r)
		if c.String() != r {
			t.Errorf("CompileRule(%s).String() = %s", r, c.String())
		}
		for _, p := range paths {
			if got, want := c.MatchUnder(p), MatchUnder(r, p); got != want {
				t.Errorf("CompileRule(%s).MatchUnder(%s) = %v, MatchUnder says %v", r, p, got, want)
			}
		}
	}
}

func BenchmarkCompiledRule(b *testing.B) {
	r := CompileRule("/w/**/.git/modules/**/config")
	for range b.N {
		r.MatchUnder("/w/src/pkg/internal/thing/file.go")
		r.MatchUnder("/w/src/.git/objects/ab/cdef")
	}
}
