package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A deny or protect entry may be a pattern: "*", "?" and "[...]" match
// within one path component (as path.Match), and a component "**" matches
// any number of components, none included. "**/.git/hooks" is every
// .git/hooks below the root, the root's own included; "**/*.pem" every
// .pem file. A pattern holds for what exists at start and for what appears
// later: the runner's broker refuses creating, changing, renaming or
// removing any path it matches (or that lies below a match), and a deny
// pattern's matches that exist at start are masked like a deny path.

// IsPattern reports whether a deny or protect entry is a pattern.
func IsPattern(p string) bool { return strings.ContainsAny(p, "*?[") }

// patternProblem says what is wrong with pattern p, or "".
func patternProblem(p string) string {
	for _, c := range strings.Split(p, "/") {
		if c == "**" {
			continue
		}
		if strings.Contains(c, "**") {
			return fmt.Sprintf("%q: ** must be a whole path component (\"**/.env\", \"a/**/b\")", p)
		}
		if _, err := path.Match(c, ""); err != nil {
			return fmt.Sprintf("%q: the component %q is not a valid pattern (%v)", p, c, err)
		}
	}
	if !IsPattern(p) {
		return ""
	}
	if lit := literalPrefix(p); lit == "/" || lit == "" {
		return fmt.Sprintf("%q: a pattern must start below a directory (\"**/.env\" is relative to the root)", p)
	}
	return ""
}

// literalPrefix is the directory of pattern p before its first pattern
// component.
func literalPrefix(p string) string {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if IsPattern(c) {
			return path.Clean("/" + strings.Join(comps[:i], "/"))
		}
	}
	return p
}

func comps(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

// MatchUnder reports whether the clean absolute path p is matched by the
// entry rule (a path or a pattern) or lies below a match.
func MatchUnder(rule, p string) bool {
	if !IsPattern(rule) {
		return p == rule || rule == "/" || strings.HasPrefix(p, strings.TrimSuffix(rule, "/")+"/")
	}
	return matchUnder(comps(rule), comps(p))
}

func matchUnder(pc, xc []string) bool {
	if len(pc) == 0 {
		return true
	}
	if pc[0] == "**" {
		return matchUnder(pc[1:], xc) || (len(xc) > 0 && matchUnder(pc, xc[1:]))
	}
	if len(xc) == 0 {
		return false
	}
	if ok, _ := path.Match(pc[0], xc[0]); !ok {
		return false
	}
	return matchUnder(pc[1:], xc[1:])
}

// MayMatchBelow reports whether the entry rule matches the directory dir,
// something below it, or something it lies below: renaming or removing dir
// would move or remove what rule guards.
func MayMatchBelow(rule, dir string) bool {
	if !IsPattern(rule) {
		return MatchUnder(rule, dir) || MatchUnder(dir, rule)
	}
	return mayBelow(comps(rule), comps(dir))
}

func mayBelow(pc, xc []string) bool {
	if len(xc) == 0 || len(pc) == 0 {
		return true
	}
	if pc[0] == "**" {
		return mayBelow(pc[1:], xc) || mayBelow(pc, xc[1:])
	}
	if ok, _ := path.Match(pc[0], xc[0]); !ok {
		return false
	}
	return mayBelow(pc[1:], xc[1:])
}

// maxPatternMatches bounds what one deny pattern's walk may find.
const maxPatternMatches = 4096

// PatternMatches returns the paths that exist now below the literal
// prefix of pattern, on this host, that it matches (not what lies below a
// match). The walk does not follow symlinks and skips directories the
// pattern cannot reach.
func PatternMatches(pattern string) ([]string, error) {
	return walkMatches(pattern, literalPrefix(pattern), func(p string) string { return p })
}

// walkMatches walks the host directory start and returns what pattern
// matches there, each host path p named as the path at(p), which is what
// the pattern is matched against: the host directory is never joined with
// the pattern, so its path may hold pattern characters. A start, or a
// component of it, that is not a directory holds no match.
func walkMatches(pattern, start string, at func(string) string) ([]string, error) {
	pc := comps(pattern)
	var out []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		name := at(p)
		xc := comps(name)
		if matchExact(pc, xc) {
			out = append(out, name)
			if d.IsDir() {
				return fs.SkipDir // below a match is covered by the match
			}
		}
		if d.IsDir() && !mayBelow(pc, xc) {
			return fs.SkipDir
		}
		if len(out) > maxPatternMatches {
			return fmt.Errorf("deny pattern %q matches more than %d paths; narrow it", pattern, maxPatternMatches)
		}
		return nil
	})
	return out, err
}

func matchExact(pc, xc []string) bool {
	if len(pc) == 0 {
		return len(xc) == 0
	}
	if pc[0] == "**" {
		return matchExact(pc[1:], xc) || (len(xc) > 0 && matchExact(pc, xc[1:]))
	}
	if len(xc) == 0 {
		return false
	}
	if ok, _ := path.Match(pc[0], xc[0]); !ok {
		return false
	}
	return matchExact(pc[1:], xc[1:])
}

// withoutPatterns returns sb with its pattern entries replaced, for the
// mount translation, by what the deny patterns match on the host now:
// protect patterns have no mount (the broker holds them).
func withoutPatterns(sb *Sandbox) (*Sandbox, error) {
	if !slices.ContainsFunc(sb.Deny, IsPattern) && !slices.ContainsFunc(sb.Protect, IsPattern) {
		return sb, nil
	}
	c := sb.Clone()
	c.Deny, c.Protect = nil, nil
	zones := sandboxZones(sb)
	if sb.System.Kind == SystemRootfs {
		// An alias at "/" (the rootfs shows the root) is walked in it.
		zones = append(zones, zone{source: sb.System.Rootfs, target: "/", readonly: true})
	}
	var errs []error
	for _, d := range sb.Deny {
		if !IsPattern(d) {
			c.Deny = append(c.Deny, d)
			continue
		}
		m, err := sandboxPatternMatches(zones, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("deny %s: %w", d, err))
		}
		for _, p := range m {
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				// A mount cannot cover a link: the pattern's broker rule
				// keeps the link, withPatternLinks's entry its target.
				continue
			}
			if !slices.Contains(c.Deny, p) {
				c.Deny = append(c.Deny, p)
			}
		}
	}
	for _, p := range sb.Protect {
		if !IsPattern(p) {
			c.Protect = append(c.Protect, p)
		}
	}
	return c, errors.Join(errs...)
}

// sandboxPatternMatches is PatternMatches of the sandbox pattern d: the
// walk is of the host directory the zone holding d's literal prefix shows
// there (an alias "/alias2/**/*.pem" of a mount of the root's sub walks
// the sub), with the zone's source resolved as the kernel resolved it when
// it mounted it (a source that is a symlink is walked where it leads),
// and the matches are the sandbox paths of what it finds.
func sandboxPatternMatches(zones []zone, d string) ([]string, error) {
	lit := literalPrefix(d)
	z, ok := containingZone(zones, lit)
	if !ok {
		return PatternMatches(d)
	}
	f := hostForms(z.source)
	src := f[len(f)-1]
	return walkMatches(d, hostPathIn(zone{source: src, target: z.target}, true, lit), func(p string) string {
		return joinRest(z.target, comps(strings.TrimPrefix(p, src)))
	})
}

// Rule is a deny or protect entry prepared for matching many paths (the
// runner's broker decides every create, remove and rename against each
// entry): MatchUnder without splitting the entry again or allocating.
type Rule struct {
	rule    string
	pattern bool
	// under is the entry with a trailing "/" (a path), or its literal
	// prefix with one (a pattern): no path that does not start with it,
	// or equal it without the "/", can match.
	under string
	pc    []string
	lit   []bool // pc[i] has no pattern character: compared, not matched
	// need are the literal components after the literal prefix: a path
	// without each of them among its components cannot match.
	need []string
	// needSub are the longest literal runs of the pattern components
	// ("*.pem" gives ".pem"): a matching component holds its run, so a
	// path that does not contain it cannot match (a test of a few bytes
	// against path.Match for each component at each "**" depth).
	needSub []string
}

// CompileRule prepares the entry rule (a path or a pattern).
func CompileRule(rule string) Rule {
	r := Rule{rule: rule, pattern: IsPattern(rule)}
	if !r.pattern {
		r.under = strings.TrimSuffix(rule, "/") + "/"
		return r
	}
	r.pc = comps(rule)
	prefix := len(comps(literalPrefix(rule)))
	for i, c := range r.pc {
		lit := !strings.ContainsAny(c, `*?[\`)
		r.lit = append(r.lit, lit)
		if lit && i >= prefix {
			r.need = append(r.need, c)
		}
		if run := literalRun(c); !lit && run != "" {
			r.needSub = append(r.needSub, run)
		}
	}
	r.under = strings.TrimSuffix(literalPrefix(rule), "/") + "/"
	return r
}

// String returns the entry as written.
func (r Rule) String() string { return r.rule }

// MatchUnder is MatchUnder(entry, p).
func (r Rule) MatchUnder(p string) bool {
	if !r.pattern {
		return p == r.rule || r.under == "/" || strings.HasPrefix(p, r.under)
	}
	if r.under != "/" && !strings.HasPrefix(p, r.under) && (len(p)+1 != len(r.under) || !strings.HasPrefix(r.under, p)) {
		return false
	}
	for _, c := range r.need {
		if !hasComp(p, c) {
			return false
		}
	}
	for _, sub := range r.needSub {
		if !strings.Contains(p, sub) {
			return false
		}
	}
	var buf [32]string
	return r.matchFrom(0, appendComps(buf[:0], p))
}

// literalRun returns the longest run of c, a pattern component, that
// every name it matches holds as it is: "" when c has a class or an
// escape (whose bytes are not literal), or no run of two bytes or more.
func literalRun(c string) string {
	if strings.ContainsAny(c, `[\`) {
		return ""
	}
	best := ""
	for _, run := range strings.FieldsFunc(c, func(r rune) bool { return r == '*' || r == '?' }) {
		if len(run) > len(best) {
			best = run
		}
	}
	if len(best) < 2 {
		return ""
	}
	return best
}

// hasComp reports whether c is one of the components of p.
func hasComp(p, c string) bool {
	for {
		i := strings.Index(p, c)
		if i < 0 {
			return false
		}
		end := i + len(c)
		if (i == 0 || p[i-1] == '/') && (end == len(p) || p[end] == '/') {
			return true
		}
		p = p[i+1:]
	}
}

// matchFrom is matchUnder(r.pc[i:], xc), with literal components compared.
func (r *Rule) matchFrom(i int, xc []string) bool {
	for ; i < len(r.pc); i++ {
		if r.pc[i] == "**" {
			for j := 0; j <= len(xc); j++ {
				if r.matchFrom(i+1, xc[j:]) {
					return true
				}
			}
			return false
		}
		if len(xc) == 0 {
			return false
		}
		if r.lit[i] {
			if r.pc[i] != xc[0] {
				return false
			}
		} else if ok, _ := path.Match(r.pc[i], xc[0]); !ok {
			return false
		}
		xc = xc[1:]
	}
	return true
}

// appendComps appends the components of p to dst, as comps(p).
func appendComps(dst []string, p string) []string {
	for p != "" {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return append(dst, p)
		}
		if i > 0 {
			dst = append(dst, p[:i])
		}
		p = p[i+1:]
	}
	return dst
}
