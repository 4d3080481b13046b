package darwin

import (
	"path"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// A deny or protect entry may be a pattern (spec.IsPattern): "*", "?" and
// "[...]" within one component, and a whole component "**" for any number
// of components. Seatbelt matches paths by regex, so a pattern becomes one:
// its literal directory is canonicalized and spelled case-insensitively as
// any other path, and the rest is translated here.

// splitPattern returns the literal directory before p's first pattern
// component and the components from there on.
func splitPattern(p string) (lit string, rest []string) {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if spec.IsPattern(c) {
			return path.Clean("/" + strings.Join(comps[:i], "/")), comps[i:]
		}
	}
	return p, nil
}

// patternRegex is the regex of the paths pattern p matches (a literal
// directory lit, already canonical, then rest), and of everything below
// them when subtree is set. A "[...]" class becomes any one character of a
// name: a deny or a protect may be too wide, never too narrow.
func patternRegex(lit string, rest []string, subtree bool) string {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(strings.TrimSuffix(pathRegex(lit, false), "$"), "/"))
	if lit == "/" {
		b.Reset()
		b.WriteByte('^')
	}
	for _, c := range rest {
		if c == "**" {
			b.WriteString("(/[^/]+)*")
			continue
		}
		b.WriteByte('/')
		b.WriteString(componentRegex(c))
	}
	if subtree {
		b.WriteString("(/.*)?")
	}
	b.WriteByte('$')
	return b.String()
}

// componentRegex translates one path.Match component; one that is not a
// valid pattern is a literal name.
func componentRegex(c string) string {
	var b strings.Builder
	if _, err := path.Match(c, ""); err != nil {
		r := pathRegex("/"+c, false)
		return strings.TrimSuffix(strings.TrimPrefix(r, "^/"), "$")
	}
	lit := func(s string) {
		if s != "" {
			r := pathRegex("/"+s, false)
			b.WriteString(strings.TrimSuffix(strings.TrimPrefix(r, "^/"), "$"))
		}
	}
	start := 0
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '*':
			lit(c[start:i])
			b.WriteString("[^/]*")
			start = i + 1
		case '?':
			lit(c[start:i])
			b.WriteString("[^/]")
			start = i + 1
		case '[':
			lit(c[start:i])
			end := strings.IndexByte(c[i+1:], ']')
			if end < 0 {
				end = len(c) - i - 1 // spec refused it; be wide
			}
			b.WriteString("[^/]")
			i += end + 1
			start = i + 1
		case '\\':
			lit(c[start:i])
			if i+1 < len(c) {
				i++
				lit(c[i : i+1])
			}
			start = i + 1
		}
	}
	if start < len(c) {
		lit(c[start:])
	}
	return b.String()
}

// entryRegexes are the regexes of a deny or protect entry in every
// spelling: a plain path as pathRegex, a pattern through patternRegex.
//
// A pattern also keeps its literal reading: a workspace whose own name
// holds "[" or "*" makes every entry below it look like a pattern, and the
// literal path must stay covered whatever the pattern matches.
func (b *profileBuilder) entryRegexes(what, p string, subtree bool) []string {
	var out []string
	for _, sp := range b.denySpellings(what, p) {
		out = append(out, pathRegex(sp, subtree))
	}
	if !spec.IsPattern(p) {
		return out
	}
	lit, rest := splitPattern(p)
	for _, sp := range b.denySpellings(what, lit) {
		out = appendUnique(out, patternRegex(sp, rest, subtree))
	}
	return out
}
