package darwin

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxStringBytes bounds every string and regex literal in a profile.
// sandbox-exec rejects a literal of more than 1025 bytes ("Error reading
// string") and would then refuse the whole profile; staying below gives a
// clear error here instead.
const maxStringBytes = 1000

// checkString refuses what cannot be placed safely in a profile: control
// characters (a newline could end a string in a reader that does not
// honour escapes, and no legitimate path needs one) and invalid UTF-8.
func checkString(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: %w: not valid UTF-8", what, s, ErrUnsafeString)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%s %q: %w: it contains the control character %U; rename it or run on Linux", what, s, ErrUnsafeString, r)
		}
	}
	return nil
}

// quote renders s as an SBPL string literal: backslash and double quote are
// escaped, everything else is literal. s must have passed checkString.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

// regexLiteral renders a regex as an SBPL regex literal #"...". The regexes
// built here never hold a backslash or a double quote (see pathRegex), so no
// escaping rule of the profile reader is involved.
func regexLiteral(re string) string { return `#"` + re + `"` }

// pathRegex returns an anchored, case-insensitive regex for path p, and, when
// subtree is true, for everything under it: ^P(/.*)?$. It is built for deny
// rules, so where it cannot match p's characters exactly it matches more,
// never less:
//
//   - a letter becomes a class of its case variants, [gG], or a group when
//     a variant is not ASCII: s becomes (s|S|ſ), because the filesystem
//     folds the long s to s, and é becomes (é|É);
//   - the regex metacharacters . * + ? ( ) { } | $ become one-character
//     classes ([.]), which every POSIX engine reads literally;
//   - the characters that are awkward inside a class or a literal, [ ] ^ \
//     and ", become [^/]: any one byte but a slash.
//
// No backslash and no double quote ever reaches the result.
func pathRegex(p string, subtree bool) string {
	var b strings.Builder
	b.WriteByte('^')
	if p == "/" {
		if subtree {
			b.WriteString("/.*$")
		} else {
			b.WriteString("/$")
		}
		return b.String()
	}
	for _, r := range p {
		folds := caseFolds(r)
		switch {
		case len(folds) > 1 && allASCII(folds):
			b.WriteByte('[')
			for _, f := range folds {
				b.WriteRune(f)
			}
			b.WriteByte(']')
		case len(folds) > 1:
			b.WriteByte('(')
			for i, f := range folds {
				if i > 0 {
					b.WriteByte('|')
				}
				b.WriteRune(f)
			}
			b.WriteByte(')')
		case strings.ContainsRune(".*+?(){}|$", r):
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		case strings.ContainsRune("[]^\\\"", r):
			b.WriteString("[^/]")
		default:
			b.WriteRune(r)
		}
	}
	if subtree {
		b.WriteString("(/.*)?")
	}
	b.WriteByte('$')
	return b.String()
}

func allASCII(rs []rune) bool {
	for _, r := range rs {
		if r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// caseFolds returns r's simple case-folding orbit (r and the runes that
// equal it ignoring case), in ascending order.
func caseFolds(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
