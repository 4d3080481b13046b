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
		{name: "source with pattern characters inside the root", pattern: ws + "/**/*.pem", source: ws + "/s*b[1]?", target: "/t",
			want: []string{"/t/**/*.pem"}, probe: map[string]bool{"k.pem": true, "d/k.pem": true, "k.txt": false}},
		{name: "source with pattern characters reached from elsewhere", pattern: ws + "/keys/**/*.pem", source: `/nonexistent-cordon/k*[1]\`, target: "/k2",
			via: ws + "/keys", want: []string{"/k2/**/*.pem"}, probe: map[string]bool{"k.pem": true, "d/k.pem": true, "k.txt": false}},
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

// TestPatternAliasRefused: a mount a pattern reaches, whose target holds a
// pattern character, cannot carry the pattern's alias (a source may hold
// them: TestPatternAliasTranslation):
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

// TestEscapePattern: a literal path joined onto a pattern escaped matches
// itself only, whatever pattern characters it holds, and the pattern
// holds below it (a mount's source in a translated pattern).
func TestEscapePattern(t *testing.T) {
	for _, c := range []struct{ dir, other string }{
		{"/p/q[x]", "/p/qx"},
		{"/p/a*b", "/p/aZb"},
		{"/p/a?b", "/p/aZb"},
		{`/p/a\b`, "/p/ab"},
		{"/p/[ab]/c]", "/p/a/c]"},
		{"/p/plain", "/p/plainer"},
	} {
		pat := joinRest(EscapePattern(c.dir), []string{"**", "*.pem"})
		if !MatchUnder(pat, c.dir+"/d/k.pem") || !MatchUnder(pat, c.dir+"/k.pem") {
			t.Errorf("%s does not match %s/d/k.pem", pat, c.dir)
		}
		if MatchUnder(pat, c.other+"/k.pem") || MatchUnder(pat, c.dir+"/k.txt") {
			t.Errorf("%s matches %s/k.pem or %s/k.txt", pat, c.other, c.dir)
		}
		if problem := patternProblem(pat); problem != "" {
			t.Errorf("%s: %s", pat, problem)
		}
	}
}

// TestPatternJoinedOntoPatternCharsRefused: an entry joined onto a root,
// or a mount's target, whose path holds a pattern character ("q[x]")
// reads that part as a pattern and matches other paths, never the files
// there: AliasProblems, ToOCI and validation refuse it with an AliasError
// naming the field, the entry and what is allowed. A root without one is
// fine.
func TestPatternJoinedOntoPatternCharsRefused(t *testing.T) {
	const up = "/nonexistent-cordon"
	cases := []struct {
		name, field, entry string
		sb                 Sandbox
	}{
		{"root with a class, protect pattern", "sandbox.root", up + "/q[x]/**/.git/hooks",
			Sandbox{Root: up + "/q[x]", Protect: []string{up + "/q[x]/**/.git/hooks"}}},
		{"root with a class, protect path", "sandbox.root", up + "/q[x]/.git/hooks",
			Sandbox{Root: up + "/q[x]", Protect: []string{up + "/q[x]/.git/hooks"}}},
		{"root with a star, deny pattern", "sandbox.root", up + "/a*/**/*.pem",
			Sandbox{Root: up + "/a*", Deny: []string{up + "/a*/**/*.pem"}}},
		{"root with a backslash, deny path", "sandbox.root", up + `/a\b/.env`,
			Sandbox{Root: up + `/a\b`, Deny: []string{up + `/a\b/.env`}}},
		{"mount target with a question mark", "sandbox.mounts[0]", "/m?/k.pem",
			Sandbox{Root: up + "/ws", Deny: []string{"/m?/k.pem"}, Mounts: []Mount{{Source: up + "/src", Target: "/m?"}}}},
		{"plain root", "", "", Sandbox{Root: up + "/ws", Deny: []string{up + "/ws/.env", up + "/ws/**/*.pem"}, Protect: []string{up + "/ws/.git/hooks"}}},
		// A deny path's alias at such a target (the workspace mounted
		// again at /m[1]) is refused at the run (it would read as a
		// pattern that matches /m1/.env).
		{"alias of a deny path at a mount target with a class", "sandbox.mounts[0]", "/m[1]/.env",
			Sandbox{Root: up + "/ws", Deny: []string{up + "/ws/.env"}, Mounts: []Mount{{Source: up + "/ws", Target: "/m[1]"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := &c.sb
			aliased := !slices.Contains(append(slices.Clone(sb.Deny), sb.Protect...), c.entry)
			if aliased {
				sb = WithAliases(sb)
			}
			err := AliasProblems(sb)
			if c.field == "" {
				if err != nil {
					t.Fatalf("AliasProblems: %v", err)
				}
				return
			}
			var ae *AliasError
			if !errors.As(err, &ae) || !errors.Is(err, ErrUnenforceable) || ae.Field != c.field || ae.Pattern != c.entry {
				t.Fatalf("AliasProblems = %v, want an AliasError of %s for %s", err, c.field, c.entry)
			}
			if !strings.Contains(err.Error(), "fix: ") || !strings.Contains(err.Error(), "none of * ? [") && !strings.Contains(err.Error(), "without * ? [") {
				t.Errorf("%q does not say what is allowed", err)
			}
			if _, err := ToOCI(sb, ociProc(), ociRun()); !errors.As(err, &ae) {
				t.Errorf("ToOCI = %v, want the AliasError", err)
			}
			if aliased {
				return // the config holds no such entry: the run refuses it
			}
			d := newDecoder()
			validateSandbox(sb, d)
			if !slices.ContainsFunc(d.errs, func(e error) bool {
				var fe *FieldError
				return errors.As(e, &fe) && fe.Field == c.field && strings.Contains(fe.Problem, c.entry)
			}) {
				t.Errorf("validation does not refuse it: %v", d.errs)
			}
		})
	}
}

// TestPatternMasksAtSymlinkSource: a deny pattern's matches at a mount
// whose source is a symbolic link (outside the root) to a directory inside
// it are masked at the mount's path: the walk is of the directory the link
// leads to, as the kernel mounted it, not of the link, which a walk does
// not descend. A source whose path holds pattern characters is walked as
// it is.
func TestPatternMasksAtSymlinkSource(t *testing.T) {
	for _, sub := range []string{"sub", "s[1]*"} {
		t.Run(sub, func(t *testing.T) {
			ws := t.TempDir()
			for _, f := range []string{sub + "/k2.pem", sub + "/d/k3.pem", sub + "/keep.txt"} {
				p := filepath.Join(ws, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			lnk := filepath.Join(t.TempDir(), "lnk")
			if err := os.Symlink(filepath.Join(ws, sub), lnk); err != nil {
				t.Fatal(err)
			}
			sb := &Sandbox{Root: ws, Deny: []string{ws + "/**/*.pem"}, Mounts: []Mount{{Source: lnk, Target: "/al"}}}
			if err := AliasProblems(WithAliases(sb)); err != nil {
				t.Fatalf("AliasProblems: %v", err)
			}
			got, err := withoutPatterns(WithAliases(sb))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"/al/k2.pem", "/al/d/k3.pem"} {
				if !slices.Contains(got.Deny, want) {
					t.Errorf("deny lacks %s: %v", want, got.Deny)
				}
			}
			if slices.ContainsFunc(got.Deny, func(d string) bool { return strings.HasSuffix(d, "keep.txt") }) {
				t.Errorf("deny masks a file the pattern does not match: %v", got.Deny)
			}
		})
	}
}

// TestPatternMasksAtFileSource: a pattern whose rest after a single-file
// mount's source starts with a literal part ("**/deep/x/*.pem" and the
// source top.pem give the alias top.pem/deep/x/*.pem) matches nothing
// there, and the build goes on: a walk whose start is not a directory, or
// is missing, finds no match (it once failed with "not a directory").
func TestPatternMasksAtFileSource(t *testing.T) {
	ws := t.TempDir()
	for _, f := range []string{"top.pem", "a/deep/x/k.pem"} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		mounts []Mount
		want   []string
	}{
		{"file mounted at its own path", []Mount{{Source: ws + "/top.pem"}}, []string{ws + "/a/deep/x/k.pem"}},
		{"file mounted elsewhere", []Mount{{Source: ws + "/top.pem", Target: "/t.pem"}}, []string{ws + "/a/deep/x/k.pem"}},
		{"missing source", []Mount{{Source: ws + "/gone", Target: "/g"}}, []string{ws + "/a/deep/x/k.pem"}},
		{"directory", []Mount{{Source: ws + "/a", Target: "/d"}}, []string{ws + "/a/deep/x/k.pem", "/d/deep/x/k.pem"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := &Sandbox{Root: ws, Deny: []string{ws + "/**/deep/x/*.pem"}, Mounts: c.mounts}
			got, err := withoutPatterns(WithAliases(sb))
			if err != nil {
				t.Fatalf("withoutPatterns: %v", err)
			}
			for _, w := range c.want {
				if !slices.Contains(got.Deny, w) {
					t.Errorf("deny lacks %s: %v", w, got.Deny)
				}
			}
		})
	}
}

// TestAliasOfLinkTargetWithPatternChars: where an entry's path leads
// through a symbolic link to a directory whose path holds pattern
// characters (ws/l -> up/a[1]), its aliases at a mount of that directory's
// parent (/up) match the file itself, not what the characters would match
// as a pattern (/up/a1): the link's target is joined escaped, for a path
// and for a pattern.
func TestAliasOfLinkTargetWithPatternChars(t *testing.T) {
	up, ws := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(up, "a[1]"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(up, "a[1]"), filepath.Join(ws, "l")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		entry    string
		held     []string
		notHeld  []string
		aliasDir string
	}{
		{ws + "/l/.env", []string{"/up/a[1]/.env"}, []string{"/up/a1/.env", "/up/a[1]/x"}, "/up"},
		{ws + "/l/**/*.pem", []string{"/up/a[1]/k.pem", "/up/a[1]/d/k.pem"}, []string{"/up/a1/k.pem", "/up/a[1]/k.txt"}, "/up"},
	}
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			sb := &Sandbox{Root: ws, Deny: []string{c.entry}, Mounts: []Mount{{Source: up, Target: "/up"}}}
			got := WithAliases(sb)
			for _, p := range c.held {
				if !slices.ContainsFunc(got.Deny, func(d string) bool { return MatchUnder(d, p) }) {
					t.Errorf("%s is not held: %v", p, got.Deny)
				}
			}
			for _, p := range c.notHeld {
				if slices.ContainsFunc(got.Deny, func(d string) bool { return MatchUnder(d, p) }) {
					t.Errorf("%s is held: %v", p, got.Deny)
				}
			}
			if err := AliasProblems(got); err != nil {
				t.Errorf("AliasProblems: %v", err)
			}
		})
	}
}
