package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPatternAliasTranslation: a deny or protect pattern holds at every
// mount that shows a host file it matches, translated into the mount's
// place (the mount's source matched component by component); a mount the
// pattern cannot reach gets nothing. Each case is checked both ways: the
// aliases WithAliases adds, and that a path below the mount matches one of
// them exactly when its host path matches the pattern.
func TestPatternAliasTranslation(t *testing.T) {
	const ws = "/nonexistent-cordon/ws"
	cases := []struct {
		name, pattern, source, target string
		readonly                      bool
		// via, when set, is a second mount of source at via: the
		// pattern is about the sandbox paths there.
		via   string
		want  []string // aliases inside target
		probe map[string]bool
	}{
		{name: "doublestar below an inner mount", pattern: ws + "/**/*.pem", source: ws + "/sub", target: "/alias2",
			want:  []string{"/alias2/**/*.pem"},
			probe: map[string]bool{"k2.pem": true, "a/b/k.pem": true, "k.pem.txt": false}},
		{name: "read-only mount too", pattern: ws + "/**/*.pem", source: ws + "/sub", target: "/ro", readonly: true,
			want: []string{"/ro/**/*.pem"}, probe: map[string]bool{"k2.pem": true}},
		{name: "anchored prefix reaches into the source", pattern: ws + "/sub/x/**", source: ws + "/sub", target: "/alias2",
			want: []string{"/alias2/x/**"}, probe: map[string]bool{"x": true, "x/y": true, "y": false}},
		{name: "anchored prefix elsewhere", pattern: ws + "/other/**", source: ws + "/sub", target: "/alias2",
			probe: map[string]bool{"other": false, "x": false}},
		{name: "leading wildcard, source one level down", pattern: ws + "/*/secret", source: ws + "/a", target: "/t",
			want: []string{"/t/secret"}, probe: map[string]bool{"secret": true, "secret/x": true, "b/secret": false}},
		{name: "leading wildcard, source two levels down", pattern: ws + "/*/secret", source: ws + "/a/b", target: "/t",
			probe: map[string]bool{"secret": false, "x/secret": false}},
		{name: "two wildcards, source two levels down", pattern: ws + "/*/*/k", source: ws + "/a/b", target: "/t",
			want: []string{"/t/k"}, probe: map[string]bool{"k": true, "c/k": false}},
		{name: "source is a match", pattern: ws + "/**/.git/hooks", source: ws + "/sub/.git/hooks", target: "/hooks",
			want: []string{"/hooks"}, probe: map[string]bool{"pre-commit": true}},
		{name: "source below a match", pattern: ws + "/**/.git/hooks", source: ws + "/sub/.git/hooks/d", target: "/d",
			want: []string{"/d"}, probe: map[string]bool{"x": true}},
		{name: "source halfway through a match", pattern: ws + "/**/.git/hooks", source: ws + "/sub/.git", target: "/g",
			want:  []string{"/g/hooks", "/g/**/.git/hooks"},
			probe: map[string]bool{"hooks/pre-commit": true, "x/.git/hooks": true, "config": false}},
		{name: "wildcard inside a component", pattern: ws + "/s*/*.pem", source: ws + "/sub", target: "/t",
			want: []string{"/t/*.pem"}, probe: map[string]bool{"k.pem": true, "d/k.pem": false}},
		{name: "source the wildcard does not match", pattern: ws + "/x*/*.pem", source: ws + "/sub", target: "/t",
			probe: map[string]bool{"k.pem": false}},
		{name: "mount outside the root", pattern: ws + "/**/*.pem", source: "/nonexistent-cordon/other", target: "/o",
			probe: map[string]bool{"k.pem": false}},
		{name: "mount of a parent of the root", pattern: ws + "/**/*.pem", source: "/nonexistent-cordon", target: "/up",
			want: []string{"/up/ws/**/*.pem"}, probe: map[string]bool{"ws/k.pem": true, "k.pem": false}},
		{name: "sandbox pattern reaching into a mount from elsewhere", pattern: ws + "/keys/*.pem", source: "/nonexistent-cordon/keys", target: "/k2",
			via: ws + "/keys", want: []string{"/k2/*.pem"}, probe: map[string]bool{"k.pem": true, "d/k.pem": false}},
		{name: "sandbox doublestar reaching into a mount from elsewhere", pattern: ws + "/**/*.pem", source: "/nonexistent-cordon/keys", target: "/k2",
			via: ws + "/keys", want: []string{"/k2/**/*.pem"}, probe: map[string]bool{"k.pem": true, "d/k.pem": true, "k.txt": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := &Sandbox{Root: ws, Deny: []string{c.pattern},
				Mounts: []Mount{{Source: c.source, Target: c.target, Readonly: c.readonly}}}
			if c.via != "" {
				sb.Mounts = append(sb.Mounts, Mount{Source: c.source, Target: c.via})
			}
			got := WithAliases(sb)
			var in []string
			for _, d := range got.Deny {
				if within(literalPrefix(d), c.target) {
					in = append(in, d)
				}
			}
			for _, w := range c.want {
				if !slices.Contains(in, w) {
					t.Errorf("deny lacks %s: %v", w, got.Deny)
				}
			}
			if len(c.want) == 0 && len(in) > 0 {
				t.Errorf("deny holds %v at %s, which shows nothing the pattern matches", in, c.target)
			}
			for rel, want := range c.probe {
				sandboxPath := filepath.Join(c.target, rel)
				host := filepath.Join(c.source, rel)
				if c.via != "" {
					host = filepath.Join(c.via, rel)
				}
				if m := MatchUnder(c.pattern, host); m != want {
					t.Fatalf("case is wrong: MatchUnder(%s, %s) = %v", c.pattern, host, m)
				}
				held := slices.ContainsFunc(got.Deny, func(d string) bool { return MatchUnder(d, sandboxPath) })
				if held != want {
					t.Errorf("%s held: %v, want %v (deny %v)", sandboxPath, held, want, got.Deny)
				}
			}
			if err := AliasProblems(sb); err != nil {
				t.Errorf("AliasProblems: %v", err)
			}
		})
	}
}

// TestPatternAliasRefused: a mount a pattern reaches, whose target or
// source holds a pattern character, cannot carry the pattern's alias:
// AliasProblems (and so the OCI translation and config validation) refuses
// it with an AliasError naming the mount, the pattern and the fix, and it
// matches ErrUnenforceable. A mount the pattern does not reach is fine.
func TestPatternAliasRefused(t *testing.T) {
	const ws = "/nonexistent-cordon/ws"
	cases := []struct {
		name          string
		mount         Mount
		wantProblem   string
		patternReachs bool
	}{
		{"target with a bracket", Mount{Source: ws + "/sub", Target: "/al[ias"}, "its target /al[ias", true},
		{"target with a star", Mount{Source: ws + "/sub", Target: "/al*"}, "its target /al*", true},
		{"source with a star under the pattern", Mount{Source: "/nonexistent-cordon/k*", Target: ws + "/keys"}, "its source /nonexistent-cordon/k*", true},
		{"source with a star inside the root", Mount{Source: ws + "/s*b", Target: "/t"}, "its source " + ws + "/s*b", true},
		{"target with a star, out of reach", Mount{Source: "/nonexistent-cordon/other", Target: "/o*"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := &Sandbox{Root: ws, Protect: []string{ws + "/**/.git/hooks"}, Mounts: []Mount{c.mount}}
			err := AliasProblems(sb)
			if !c.patternReachs {
				if err != nil {
					t.Fatalf("AliasProblems: %v", err)
				}
				return
			}
			var ae *AliasError
			if !errors.As(err, &ae) || !errors.Is(err, ErrUnenforceable) {
				t.Fatalf("AliasProblems = %v, want an AliasError matching ErrUnenforceable", err)
			}
			for _, w := range []string{"sandbox.mounts[0]", ws + "/**/.git/hooks", c.wantProblem, "fix: give the mount a target"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
			if _, err := ToOCI(sb, ociProc(), ociRun()); !errors.As(err, &ae) || !errors.Is(err, ErrUnenforceable) {
				t.Errorf("ToOCI = %v, want the AliasError", err)
			}
			d := newDecoder()
			validateSandbox(sb, d)
			if !slices.ContainsFunc(d.errs, func(e error) bool {
				var fe *FieldError
				return errors.As(e, &fe) && fe.Field == "sandbox.mounts[0]" && strings.Contains(fe.Problem, c.wantProblem)
			}) {
				t.Errorf("validation does not refuse it: %v", d.errs)
			}
		})
	}
}

// TestPatternAliasMasksMatchesAtStart: a deny pattern's alias at a mount of
// a directory inside the root masks what it matches there at start, at the
// mount's path (the walk is of the mount's source).
func TestPatternAliasMasksMatchesAtStart(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sub/k2.pem", "sub/d/k3.pem", "sub/keep.txt"} {
		if err := os.WriteFile(filepath.Join(ws, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sb := &Sandbox{Root: ws, Deny: []string{ws + "/**/*.pem"},
		Mounts: []Mount{{Source: filepath.Join(ws, "sub"), Target: "/alias2", Readonly: true}}}
	got, err := withoutPatterns(WithAliases(sb))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/alias2/k2.pem", "/alias2/d/k3.pem", ws + "/sub/k2.pem"} {
		if !slices.Contains(got.Deny, want) {
			t.Errorf("deny lacks %s: %v", want, got.Deny)
		}
	}
	if slices.ContainsFunc(got.Deny, func(d string) bool { return strings.HasSuffix(d, "keep.txt") }) {
		t.Errorf("deny masks a file the pattern does not match: %v", got.Deny)
	}
}
