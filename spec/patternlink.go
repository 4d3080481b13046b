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

// A deny or protect pattern holds at every path the sandbox can reach
// that it matches. The broker decides a write on the path the kernel
// resolved, and a mount covers what lies behind a symlink, never the link:
// so a match that is a symlink at start (a nested repository's .git/hooks
// the host linked to realhooks/, a key.pem linked to ../real/secret) would
// leave the file it reaches, which the pattern does not name, open to
// writing or reading through it. withPatternLinks holds the rule on that
// file too, as the kernel resolves the link in the sandbox: a literal
// entry on the link's target (a read-only rebind or a mask, and a broker
// rule, with its own aliases), while the link keeps matching the pattern
// (the broker refuses removing or replacing it). A symlink met on the way
// to a match (sub/.git linked to ../realgit under **/.git/hooks) holds
// what the rest of the pattern names below its target, and a symlink
// inside a protected directory (literal or a match) its target: the
// directory's read-only mount does not reach it. A dangling link holds
// its would-be target (see reached.would). Nothing is added where the
// pattern reaches the target at its own place.

// maxPatternLinks bounds the entries the links below the patterns add
// (links reached through links included).
const maxPatternLinks = 256

// withPatternLinks returns sb with the entries that hold its deny and
// protect patterns on what their matches' symlinks reach in the sandbox
// (see above), or sb itself when there is none. systemDirs are the host
// directories the sandbox shows at their own place. pre, when it holds
// for sb and systemDirs (Links), gives the entries without walking.
func withPatternLinks(sb *Sandbox, systemDirs []string, pre *Links) (*Sandbox, error) {
	deny := &linkList{entries: sb.Deny, deny: true}
	protect := &linkList{}
	if pre.forPlan(sb, systemDirs) {
		deny.add, protect.add = pre.deny, pre.protect
	} else {
		git := gitLinkEntries(sb)
		if !slices.ContainsFunc(sb.Deny, IsPattern) && len(sb.Protect) == 0 && len(git) == 0 {
			return sb, nil // nothing to walk: literal deny entries are masked whole
		}
		linkWalks.Add(1)
		v := sandboxView{zones: sandboxZones(sb), system: systemDirs, plain: map[string]bool{"/": true}}
		protect.entries = appendNew(slices.Clone(sb.Protect), git)
		if err := v.linkEntries(deny, protect); err != nil {
			return nil, err
		}
	}
	if len(deny.add) == 0 && len(protect.add) == 0 {
		return sb, nil
	}
	c := sb.Clone()
	c.Deny = appendNew(c.Deny, deny.add)
	c.Protect = appendNew(c.Protect, protect.add)
	return c, nil
}

// gitLinkEntries returns the protect entries WithAliases adds for git
// (GitProtect: a core.hooksPath directory, what protected configs
// include, the programs they name), with their aliases: they are walked
// as the configured ones are, since a link inside a hooksPath directory
// (.githooks/pre-commit -> ../tools/pre-commit) sends the hook git runs
// out of the directory's read-only mount. Their own entries are
// WithAliases's; only what their links reach is added here.
func gitLinkEntries(sb *Sandbox) []string {
	var g []string
	for _, p := range GitProtect(sb) {
		if filepath.IsAbs(p) && !slices.Contains(sb.Protect, p) {
			g = append(g, p)
		}
	}
	if len(g) == 0 {
		return nil
	}
	return appendAliases(g, g, aliasZones(sb))
}

// PatternLinks returns the deny and protect entries withPatternLinks adds
// to sb (what its rules reach through symlinks, as sandbox paths without
// their aliases), for a decision outside the kernel backends (the mount
// table behind the file tools) to hold the same.
func PatternLinks(sb *Sandbox) (deny, protect []string, err error) {
	l, err := FindLinks(sb)
	if err != nil {
		return nil, nil, err
	}
	return l.deny, l.protect, nil
}

func appendNew(dst, add []string) []string {
	for _, a := range add {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

// sandboxView resolves sandbox paths as the kernel does in the sandbox:
// the workspace and the mounts at their targets, the host system
// directories at their own place, nothing else.
type sandboxView struct {
	zones  []zone
	system []string
	// plain caches, for a directory, whether the kernel reaches it as
	// written (no link on its path): a link below it resolves from there.
	plain map[string]bool
}

// linkList is the deny or the protect list, and what linkEntries adds to
// it.
type linkList struct {
	entries []string
	deny    bool
	add     []string
}

// walks reports whether entry e of l is walked: every pattern, and for
// protect a literal entry too: a link inside it (.git/hooks/pre-commit
// linked to ../../scripts/x) sends a write out of its read-only mount.
func (l *linkList) walks(e string) bool { return IsPattern(e) || !l.deny }

// held reports whether path n is held by l already: added, or below a
// literal entry.
func (l *linkList) held(n string) bool {
	literalAbove := func(e string) bool { return !IsPattern(e) && within(n, e) }
	return slices.ContainsFunc(l.entries, literalAbove) || slices.ContainsFunc(l.add, literalAbove) || slices.Contains(l.add, n)
}

// linkEntries adds to each list the entries that hold its patterns on
// what their matches' symlinks reach: for deny, wherever the target lies
// in the workspace or a mount; for protect, only where it is writable.
// The entries of one literal prefix are walked once together, both lists'
// (a walk reads every directory below it), and what the targets add is
// walked in turn (links reached through links).
func (v sandboxView) linkEntries(lists ...*linkList) error {
	var errs []error
	seen := map[walkEntry]bool{}
	// A link is met once per pattern that may match through it (the
	// default protect list has a dozen): follow it once.
	type followed struct {
		r  reached
		ok bool
	}
	cache := map[string]followed{}
	var round []walkEntry
	for li, l := range lists {
		for _, e := range l.entries {
			round = append(round, walkEntry{e, li})
		}
	}
	for len(round) > 0 {
		var walk []walkEntry
		for _, we := range round {
			if lists[we.list].walks(we.entry) && !seen[we] {
				seen[we] = true
				walk = append(walk, we)
			}
		}
		links, err := patternLinks(walk, func(list int) bool { return !lists[list].deny })
		if err != nil {
			return err
		}
		round = nil
		for _, pl := range links {
			l := lists[pl.list]
			f, hit := cache[pl.link]
			if !hit {
				f.r, f.ok = v.follow(pl.link)
				cache[pl.link] = f
			}
			r, ok := f.r, f.ok
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("cannot hold %s on %s: the link does not resolve (a loop, or more than 40 links): "+
					"remove the link or replace it by what it points to: %w", pl.pattern, pl.link, ErrUnenforceable))
				continue
			case !r.inZone && l.deny && r.exists && pl.states[0] == len(pl.pc) && v.shown(r.end):
				// A file of a host system directory the link names: the
				// sandbox reads it through the match, so it is masked
				// as a literal deny entry is.
			case !r.inZone, !l.deny && r.z.readonly:
				// Nothing the command can write there, nor read as a
				// file it matches rather than at its own place.
				continue
			}
			base, whole := r.would()
			reach := statesAt(pl.pc, comps(base), !l.deny)
			for _, i := range pl.states {
				n := base
				if i < len(pl.pc) && !whole {
					n = base + "/" + strings.Join(pl.pc[i:], "/")
				}
				switch {
				case !whole && slices.Contains(reach, i):
					continue // the pattern reaches it at its own place
				case l.held(n):
					continue
				case len(l.add) >= maxPatternLinks:
					return fmt.Errorf("%s: its matches' symlinks reach more than %d places it does not; narrow the pattern or list the targets: %w",
						pl.pattern, maxPatternLinks, ErrUnenforceable)
				}
				l.add = append(l.add, n)
				round = append(round, walkEntry{n, pl.list}) // links below it count too
			}
		}
	}
	return errors.Join(errs...)
}

// walkEntry is an entry of list number list, to walk.
type walkEntry struct {
	entry string
	list  int
}

// patternLink is a symlink met by a pattern's walk: a match itself, or a
// directory on the way to one, with what the pattern names below it.
type patternLink struct {
	pattern, link string
	list          int // the walkEntry's
	// pc is the pattern's components, states its states after the link
	// (tailStates): len(pc) when the link matches.
	pc     []string
	states []int
}

// patternLinks walks the literal prefixes of entries (a literal entry:
// itself), each once for all the entries that share it, and returns the
// symlinks that match one or may lead to a match; for the lists inside
// says, also those below a match (a protected directory is read-only, but
// a link in it is not held by its mount). Like PatternMatches it follows
// no link and skips the directories no pattern can reach; it reads each
// directory once and looks at nothing but directories and links.
func patternLinks(entries []walkEntry, inside func(list int) bool) ([]patternLink, error) {
	byRoot := map[string]*linkWalk{}
	var roots []string
	for _, e := range entries {
		r := literalPrefix(e.entry)
		w := byRoot[r]
		if w == nil {
			w = &linkWalk{}
			byRoot[r] = w
			roots = append(roots, r)
		}
		w.pats = append(w.pats, walkPattern{pc: comps(e.entry), list: e.list, inside: inside(e.list)})
	}
	var out []patternLink
	for _, r := range roots {
		w := byRoot[r]
		rc := comps(r)
		states := make([][]int, len(w.pats))
		for i, p := range w.pats {
			states[i] = statesAt(p.pc, rc, p.inside)
		}
		fi, err := os.Lstat(r)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrPermission):
			continue // nothing there (below a file, .git one), or nothing the run can reach
		case err != nil:
			return nil, fmt.Errorf("walk %s: %w", r, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			w.link(r, states)
		case fi.IsDir():
			err = w.dir(r, states)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, w.out...)
	}
	return out, nil
}

// walkPattern is an entry as a linkWalk matches it: its components, its
// list, and whether links below its matches count (inside).
type walkPattern struct {
	pc     []string
	list   int
	inside bool
}

// linkWalk is one walk of patternLinks: the entries' patterns, and the
// links found.
type linkWalk struct {
	pats []walkPattern
	out  []patternLink
}

// dir walks directory p; states[i] are pattern i's states at p (see
// step), nil for a pattern that cannot match below.
func (w *linkWalk) dir(p string, states [][]int) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // gone or replaced meanwhile, or unreadable: as PatternMatches
		}
		return fmt.Errorf("walk %s: %w", p, err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("walk %s: %w", p, err)
	}
	for _, e := range ents {
		typ := e.Type()
		if !typ.IsDir() && typ&fs.ModeSymlink == 0 {
			continue
		}
		name := e.Name()
		next := make([][]int, len(states))
		live := false
		for i, st := range states {
			if st != nil {
				next[i] = step(w.pats[i].pc, st, name, w.pats[i].inside)
				live = live || next[i] != nil
			}
		}
		if !live {
			continue
		}
		cp := p + "/" + name
		if typ&fs.ModeSymlink != 0 {
			w.link(cp, next)
			continue
		}
		for i, st := range next {
			if !w.pats[i].inside && slices.Contains(st, len(w.pats[i].pc)) {
				next[i] = nil // below a match is masked with the match
			}
		}
		if err := w.dir(cp, next); err != nil {
			return err
		}
	}
	return nil
}

// link records link p for each pattern it matches or may lead to a match
// of (states as in dir).
func (w *linkWalk) link(p string, states [][]int) {
	for i, st := range states {
		if st != nil {
			pc := w.pats[i].pc
			w.out = append(w.out, patternLink{pattern: "/" + strings.Join(pc, "/"), link: p, list: w.pats[i].list, pc: pc, states: tailStates(pc, st)})
		}
	}
}

// The walk matches a pattern as an automaton: a state is the index of the
// pattern component to match next (len(pc): matched), a "**" matches any
// number of names, so a state at one also holds the state after it. One
// step a name keeps the walk linear in the names it reads.

// startStates are pattern pc's states before any name.
func startStates(pc []string) []int { return closure(pc, []int{0}) }

// step returns the states after name from states, nil when none is left;
// with inside, a match stays one below (everything below it is held).
func step(pc []string, states []int, name string, inside bool) []int {
	var out []int
	for _, i := range states {
		switch {
		case i == len(pc):
			if inside {
				out = append(out, i)
			}
		case pc[i] == "**":
			out = append(out, i)
		default:
			if ok, _ := path.Match(pc[i], name); ok {
				out = append(out, i+1)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return closure(pc, out)
}

// closure adds to states the state after each "**", sorted, once each.
func closure(pc []string, states []int) []int {
	slices.Sort(states)
	states = slices.Compact(states)
	for k := 0; k < len(states); k++ {
		if i := states[k]; i < len(pc) && pc[i] == "**" && !slices.Contains(states, i+1) {
			states = append(states, i+1)
		}
	}
	slices.Sort(states)
	return states
}

// statesAt returns pattern pc's states after the components xc, nil when
// it cannot match there or below.
func statesAt(pc, xc []string, inside bool) []int {
	st := startStates(pc)
	for _, c := range xc {
		if st = step(pc, st, c, inside); st == nil {
			return nil
		}
	}
	return st
}

// tailStates are the states that matter of states: len(pc) alone when
// they match (the whole of what the link reaches is held), else each but
// the one after a "**" that is a state too (the "**" one holds it).
func tailStates(pc []string, states []int) []int {
	if slices.Contains(states, len(pc)) {
		return []int{len(pc)}
	}
	var out []int
	for _, i := range states {
		if i > 0 && pc[i-1] == "**" && slices.Contains(states, i-1) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// reached is where a link leads in the sandbox (see follow).
type reached struct {
	// end is the path the link resolves to, or the first missing name on
	// the way (or a file with more to come: ENOTDIR); rest is what was
	// left to walk after it.
	end  string
	rest []string
	// z is end's zone, when inZone; exists says the link resolves.
	z              zone
	inZone, exists bool
}

// would returns the path the link reaches, or would reach once its
// missing names are made as directories, and whole when a rule can only
// hold the first missing name as a whole: the rest goes up (".." after a
// missing name) or down a file. The broker refuses a symlink at a
// would-be path's missing ancestor (it leads to a rule), and walks a
// directory renamed there.
func (r reached) would() (string, bool) {
	if r.exists {
		return r.end, false
	}
	if slices.Contains(r.rest, "..") || len(r.rest) > 0 && r.rest[0] == "" {
		return r.end, true
	}
	return filepath.Join(append([]string{r.end}, r.rest...)...), false
}

// follow resolves sandbox path p, a symlink, as the kernel does in the
// sandbox: one component at a time, each link's target walked in place,
// ".." applied to the directory reached so far, never cleaned first. ok is
// false for a loop or an error.
func (v sandboxView) follow(p string) (r reached, ok bool) {
	pending := strings.Split(p, "/")
	cur := "/"
	if d := filepath.Dir(p); v.isPlain(d) {
		// The walk that met p came down d without a link: start there.
		pending, cur = []string{filepath.Base(p)}, d
	}
	w, ok := kernelWalk(cur, pending, v.lstat, v.readlink)
	if !ok {
		return reached{}, false
	}
	r = reached{end: w.end, exists: w.exists}
	for _, c := range w.rest {
		if c != "" && c != "." {
			r.rest = append(r.rest, c)
		}
	}
	r.z, r.inZone = containingZone(v.zones, r.end)
	return r, true
}

// isPlain reports whether the sandbox reaches directory d as written:
// every name on its path a directory, none a link.
func (v sandboxView) isPlain(d string) bool {
	if ok, hit := v.plain[d]; hit {
		return ok
	}
	ok := false
	if v.isPlain(filepath.Dir(d)) {
		fi, err := v.lstat(d)
		ok = err == nil && fi.IsDir()
	}
	v.plain[d] = ok
	return ok
}

// host maps sandbox path p to the host path the sandbox shows there, or
// reports that the sandbox shows no host file there (a directory the
// runtime makes for a mount point is answered by lstat as such).
func (v sandboxView) host(p string) (string, bool) {
	if z, ok := containingZone(v.zones, p); ok {
		return hostPathIn(z, true, p), true
	}
	for _, d := range v.system {
		if within(p, d) {
			return p, true
		}
	}
	return "", false
}

// shown reports whether the sandbox shows host path p at its own place
// (a host system directory).
func (v sandboxView) shown(p string) bool {
	_, ok := v.host(p)
	return ok
}

func (v sandboxView) lstat(p string) (fs.FileInfo, error) {
	if h, ok := v.host(p); ok {
		return os.Lstat(h)
	}
	for _, z := range v.zones {
		if within(z.target, p) {
			return placeholderInfo(filepath.Base(p)), nil // a mount point's parent
		}
	}
	for _, d := range v.system {
		if within(d, p) {
			return placeholderInfo(filepath.Base(p)), nil
		}
	}
	return nil, fs.ErrNotExist
}

func (v sandboxView) readlink(p string) (string, error) {
	h, ok := v.host(p)
	if !ok {
		return "", fs.ErrNotExist
	}
	return os.Readlink(h)
}
