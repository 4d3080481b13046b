package spec

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A deny or protect pattern reaches host files too, so it holds at every
// zone that shows one of them, also a zone whose source lies inside the
// pattern's reach ("**/*.pem" at the root, the root's sub mounted at
// /alias2, gives "/alias2/**/*.pem"). The pattern is matched against the
// zone's source component by component, as MatchUnder matches a path: what
// is left of it after the last component of the source is what a path
// below the source must match, and the zone's target joined with that rest
// is the alias. The rest is always a suffix of the pattern, so the
// translation is exact: target/r matches the alias exactly when source/r
// matches the pattern. A zone at "/" (system: rootfs, when the rootfs
// holds the root) may get an alias such as "/**/.git/hooks": the only
// entry whose literal prefix is "/", walked in the rootfs (withoutPatterns).
// A source is joined with a rest escaped (EscapePattern), and the masks
// walk a source without joining it with a pattern (walkMatches), so a
// source may hold pattern characters. What cannot be written as an entry
// is refused by AliasProblems: an alias at a mount whose target holds a
// pattern character, and an entry joined onto such a target or onto such
// a root (joinedProblems).

// patternMeta are the characters a path must not hold to be joined with a
// pattern's rest: path.Match would read them as pattern syntax.
const patternMeta = `*?[\`

// residuals returns the rests of pattern components pc that a path below a
// directory with components xc must match for the whole to match pc
// (MatchUnder): each a suffix of pc. An empty rest means everything at and
// below the directory matches; it is then the only rest returned. No rest
// means nothing below the directory can match.
func residuals(pc, xc []string) [][]string {
	full := len(pc) // the state "pc consumed": everything below matches
	closure := func(set []int) []int {
		for k := 0; k < len(set); k++ {
			if i := set[k]; i < len(pc) && pc[i] == "**" && !slices.Contains(set, i+1) {
				set = append(set, i+1)
			}
		}
		return set
	}
	set := closure([]int{0})
	for _, x := range xc {
		if slices.Contains(set, full) {
			return [][]string{{}}
		}
		var next []int
		for _, i := range set {
			switch {
			case pc[i] == "**":
				next = appendUnique(next, i)
			default:
				if ok, _ := path.Match(pc[i], x); ok {
					next = appendUnique(next, i+1)
				}
			}
		}
		set = closure(next)
		if len(set) == 0 {
			return nil
		}
	}
	slices.Sort(set)
	var out [][]string
	for _, i := range set {
		rest := pc[i:]
		if !slices.ContainsFunc(rest, func(c string) bool { return c != "**" }) {
			return [][]string{{}} // only ** left: everything matches
		}
		out = append(out, rest)
	}
	return out
}

func appendUnique(s []int, v int) []int {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// joinRest is dir joined with the pattern rest r; dir itself for no rest.
func joinRest(dir string, r []string) string {
	return filepath.Join(append([]string{dir}, r...)...)
}

// patternHostForms is pattern p as written and with the symbolic links of
// its literal prefix resolved on the host (the wildcards are never looked
// up: a file named "*" is no match for every name).
func patternHostForms(p string) []string {
	lit := literalPrefix(p)
	rest := strings.TrimPrefix(strings.TrimPrefix(p, lit), "/")
	out := []string{p}
	for _, f := range hostForms(lit)[1:] {
		out = append(out, filepath.Join(EscapePattern(f), rest)) // f is where a link leads: literal
	}
	return out
}

// EscapePattern returns the literal path p written as a pattern that
// matches only p, to join a pattern's rest onto: each pattern character
// escaped ("q[x]" gives `q\[x]`).
func EscapePattern(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(patternMeta, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// joinedProblems returns the entries of sb joined onto a zone (the root,
// a mount's target) whose path holds a pattern character: an entry
// "<root>/**/*.pem" with the root "/p/q[x]" reads "[x]" as a class, so it
// matches /p/qx, never the root's files; such an entry, a path or a
// pattern, cannot say which was meant.
func joinedProblems(sb *Sandbox, zones []aliasZone) []aliasProblem {
	var probs []aliasProblem
	for _, z := range zones {
		if !strings.ContainsAny(z.target, patternMeta) || z.target == "/" {
			continue
		}
		var joined []string
		for _, e := range append(slices.Clone(sb.Deny), sb.Protect...) {
			if (e == z.target || strings.HasPrefix(e, z.target+"/")) && !slices.Contains(joined, e) {
				joined = append(joined, e)
			}
		}
		if len(joined) == 0 {
			continue
		}
		// One problem a zone: the default protect list alone joins dozens.
		what := "the entry " + joined[0] + ", joined onto it, reads"
		if len(joined) > 1 {
			what = fmt.Sprintf("the %d deny and protect entries joined onto it (%s, ...) read", len(joined), joined[0])
		}
		probs = append(probs, aliasProblem{z, joined[0], fmt.Sprintf("%s holds one of the pattern characters %s, so %s them as a pattern and match other paths, never the files there", z.target, patternMeta, what)})
	}
	return probs
}

// aliasProblem is one zone a pattern cannot be translated into.
type aliasProblem struct {
	zone    aliasZone
	pattern string
	problem string
}

// patternAliases returns the sandbox paths and patterns of every zone that
// reach a host file pattern p matches (p included as the forms it takes on
// the host), and the zones it cannot be written for.
func patternAliases(p string, zones []aliasZone) ([]string, []aliasProblem) {
	pc := comps(p)
	hosts := patternHostForms(p)
	var probs []aliasProblem
	// p is a sandbox pattern: where it reaches a zone that shows another
	// host directory, the host files it matches there are the zone's.
	for _, z := range zones {
		if z.source == z.target {
			continue
		}
		for _, r := range residuals(pc, comps(z.target)) {
			for _, f := range hostForms(z.source) {
				// The source is a literal path: escaped, its pattern
				// characters match only themselves.
				hosts = append(hosts, patternHostForms(joinRest(EscapePattern(f), r))...)
			}
		}
	}
	var out []string
	for _, h := range hosts {
		hc := comps(h)
		for _, z := range zones {
			for _, src := range z.forms {
				for _, r := range residuals(hc, comps(src)) {
					alias := joinRest(z.target, r)
					if z.mount && strings.ContainsAny(z.target, patternMeta) {
						probs = append(probs, aliasProblem{z, p, fmt.Sprintf("its target %s holds one of the pattern characters %s, so the alias %s would read them as a pattern", z.target, patternMeta, alias)})
						continue
					}
					if !slices.Contains(out, alias) {
						out = append(out, alias)
					}
				}
			}
		}
	}
	return out, probs
}

// AliasError is a deny or protect pattern that cannot be enforced at a
// mount that shows some of the host files it matches. It matches
// ErrUnenforceable.
type AliasError struct {
	// Field is the mount's field, "sandbox.mounts[1]" (or "sandbox.system").
	Field string
	// Target is where the sandbox shows the mount.
	Target string
	// Pattern is the deny or protect pattern.
	Pattern string
	// Problem says why the pattern cannot be written for the mount.
	Problem string
}

// Fix says what is allowed instead.
func (e *AliasError) Fix() string {
	if e.Field == "sandbox.root" {
		return "run cordon in (or set root to) a directory whose path has none of * ? [ or \\ " +
			"(rename the directory, or the parent that holds one)"
	}
	return "give the mount a target without * ? [ or \\ (its source may hold them), " +
		"or leave the mount out"
}

// Error names the mount, the pattern, the problem and the fix.
func (e *AliasError) Error() string {
	return fmt.Sprintf("%s (target %s): the pattern %s cannot be enforced there: %s; fix: %s", e.Field, e.Target, e.Pattern, e.Problem, e.Fix())
}

// Is reports whether target is ErrUnenforceable.
func (e *AliasError) Is(target error) bool { return target == ErrUnenforceable }

// AliasProblems returns, joined, an AliasError for each mount that shows
// host files a deny or protect pattern of sb matches where the pattern
// cannot be written in the mount's place; nil when every pattern holds at
// every sandbox path (WithAliases adds them).
func AliasProblems(sb *Sandbox) error {
	zones := aliasZones(sb)
	var errs []error
	seen := map[string]bool{}
	probs := joinedProblems(sb, zones)
	for _, p := range append(slices.Clone(sb.Deny), sb.Protect...) {
		if IsPattern(p) {
			_, pp := patternAliases(p, zones)
			probs = append(probs, pp...)
		}
	}
	for _, pr := range probs {
		e := &AliasError{Field: pr.zone.field, Target: pr.zone.target, Pattern: pr.pattern, Problem: pr.problem}
		if !seen[e.Error()] {
			seen[e.Error()] = true
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// validateAliases reports AliasProblems as field errors of the mounts.
func validateAliases(sb *Sandbox, d *decoder) {
	err := AliasProblems(sb)
	if err == nil {
		return
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ae *AliasError
		if errors.As(e, &ae) {
			d.fail(ae.Field, d.line(ae.Field), fmt.Sprintf("the pattern %s cannot be enforced at %s: %s", ae.Pattern, ae.Target, ae.Problem), ae.Fix())
		}
	}
}
