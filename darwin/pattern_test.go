package darwin

import (
	"regexp"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// TestPatternRegex: a deny or protect pattern becomes a regex that matches
// what spec's own matcher matches (case-insensitively, as the filesystem
// compares names), and nothing that only looks like it.
func TestPatternRegex(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		nomatch []string
	}{
		{"/w/**/.git/hooks",
			[]string{"/w/.git/hooks", "/w/.git/hooks/pre-commit", "/w/a/b/.git/hooks/x", "/w/A/.GIT/Hooks"},
			[]string{"/w/.git/hooksx", "/w/.git", "/w/a/.git/config", "/v/.git/hooks", "/w/x.git/hooks"}},
		{"/w/**/.git/modules/**/config",
			[]string{"/w/.git/modules/config", "/w/.git/modules/sub/config", "/w/s/.git/modules/a/b/config"},
			[]string{"/w/.git/modules/sub/configx", "/w/.git/config"}},
		{"/w/**/*.pem",
			[]string{"/w/key.pem", "/w/a/b/c.pem", "/w/a/.pem"},
			[]string{"/w/key.pemx", "/w/a/key.pe"}},
		{"/w/secrets/?.env",
			[]string{"/w/secrets/a.env"},
			[]string{"/w/secrets/ab.env", "/w/secrets/.envx"}},
		{"/w/k[0-9].txt",
			[]string{"/w/k1.txt", "/w/kx.txt"}, // a class is widened to any one character
			[]string{"/w/k10.txt", "/w/k/.txt"}},
		{`/w/**/a"b(c).x`,
			[]string{`/w/d/a"b(c).x`},
			[]string{"/w/d/abc.x"}},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			if !spec.IsPattern(tc.pattern) {
				t.Fatalf("%q is not a pattern", tc.pattern)
			}
			lit, rest := splitPattern(tc.pattern)
			re := patternRegex(lit, rest, true)
			rx, err := regexp.Compile(re)
			if err != nil {
				t.Fatalf("%s: %v", re, err)
			}
			for _, m := range tc.match {
				if !rx.MatchString(m) {
					t.Errorf("%s does not match %s", re, m)
				}
			}
			for _, m := range tc.nomatch {
				if rx.MatchString(m) {
					t.Errorf("%s matches %s", re, m)
				}
			}
			if strings.Contains(re, "[*]") || strings.Contains(re, "[?]") {
				t.Errorf("%s keeps a pattern character literal", re)
			}
		})
	}
}
