package mounts

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// Origins of an Entry.
const (
	// OriginWorkspace is the workspace root.
	OriginWorkspace = "workspace"
	// OriginMount is a declared mount.
	OriginMount = "mount"
	// OriginSystem is a host system directory or a rootfs.
	OriginSystem = "system"
)

// SyntheticDirs are the sandbox directories that map to no host path: inside
// a real sandbox /tmp is a private tmpfs and /proc and /dev are synthetic.
// Paths under them are outside the sandbox for this package unless an entry
// covers them (a workspace under /tmp/x is its own entry).
var SyntheticDirs = []string{"/dev", "/proc", "/tmp"}

// Entry is one mount of the table: the sandbox path Target shows the host
// directory Source.
type Entry struct {
	// Target is the absolute sandbox path.
	Target string
	// Source is the absolute host path.
	Source string
	// Readonly makes everything under Target read-only.
	Readonly bool
	// Name is the zone name ("workspace" for the root), or "".
	Name string
	// Origin is "workspace", "mount" or "system".
	Origin string
	// Suffixes, when not empty, are the file suffixes the file tools accept.
	Suffixes []string
	// MaxFileBytes, when above zero, is the file tools' size limit.
	MaxFileBytes int64
}

// Table is the mount table of one sandbox. It is immutable after New and safe
// for concurrent use.
type Table struct {
	root    string
	entries []Entry // sorted parents before children
	synth   []string

	// denyCfg and protectCfg are the configured lists, for messages;
	// denyLinks and protectLinks what holds them on what symlinks reach
	// (spec.PatternLinks), matched and named in messages too.
	denyCfg, protectCfg     []string
	denyLinks, protectLinks []string
	// denyS/protectS are matched against sandbox paths, denyH/protectH
	// against host paths; both hold the configured paths, their lexical
	// host mapping and their resolution through symbolic links at New.
	denyS, denyH, protectS, protectH []string
	// sb is a copy of the sandbox the table was built from.
	sb *spec.Sandbox
	// links are the entries on what symlinks reach that the table found
	// or was given (Links).
	links *spec.Links
}

// New builds the mount table of sb: the workspace root, the declared mounts,
// the `system: host` directories or the rootfs, the deny list (sb.Deny plus
// the host system secrets) and the protect list. Every path of sb must be
// absolute and clean, as spec's loader leaves them. Two entries with the
// same target are an error, except that the workspace or a declared mount
// replaces a system directory with the same target.
//
// Deny and protect hold on what symlinks reach as the sandbox holds them:
// New adds the entries spec.PatternLinks finds (the target of a link a
// pattern matches, of a link inside a protected directory), which walks
// the directories below the rules; NewPlanned takes them from a plan.
func New(sb *spec.Sandbox) (*Table, error) { return build(sb, "", nil, nil) }

// NewLinked builds the table of sb as New does, taking the entries that
// hold its deny and protect rules on what symlinks reach from links when
// they hold for sb (spec.Links.For), rather than walking again; otherwise
// (links nil, or found for another sandbox) it walks as New does.
func NewLinked(sb *spec.Sandbox, links *spec.Links) (*Table, error) {
	return build(sb, "", nil, links)
}

// Links returns the entries the table holds on what symlinks reach,
// with the sandbox they were found for, when the table walked for them
// (New, NewLinked) or took them from links; nil when they came from a
// plan (NewPlanned) or another table (View).
func (t *Table) Links() *spec.Links { return t.links }

// NewPlanned builds the table of sb as New does, taking the entries that
// hold its deny and protect rules on what symlinks reach from aliased, the
// sandbox a plan of sb enforces (spec.Plan.Aliased), rather than walking
// the workspace again: every deny and protect entry of aliased that sb
// does not list (what the symlinks reach, and the aliases the kernel
// backends get) is matched as the plan's own. A run that has its plan
// builds its table with it.
func NewPlanned(sb, aliased *spec.Sandbox) (*Table, error) {
	if aliased == nil {
		return nil, fmt.Errorf("%w: no planned sandbox; use New", ErrInvalidSandbox)
	}
	return build(sb, "", aliased, nil)
}

// NewView builds the table of sb as New does, but with the workspace read
// and written through root, a host path that shows the workspace as the
// sandbox's processes see it, such as /proc/self/fd/N/WS where N holds a
// session's root: in overlay mode that is the overlay, which the host
// path of the workspace is not. Every rule is the same as New's: only the
// source of the workspace entry differs.
func NewView(sb *spec.Sandbox, root string) (*Table, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("%w: the workspace view %q must be an absolute path", ErrInvalidSandbox, root)
	}
	return build(sb, root, nil, nil)
}

// View returns the table of the same sandbox with the workspace read and
// written through root, as NewView builds it, holding t's entries on what
// symlinks reach rather than walking the workspace again (a session's
// file tools ask for a view on every call).
func (t *Table) View(root string) (*Table, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("%w: the workspace view %q must be an absolute path", ErrInvalidSandbox, root)
	}
	p := t.sb.Clone()
	p.Deny = slices.Concat(p.Deny, t.denyLinks)
	p.Protect = slices.Concat(p.Protect, t.protectLinks)
	return build(t.sb, root, p, nil)
}

// build is New with the workspace entry's source, when view is set, and
// the entries on what symlinks reach taken from planned, when set.
func build(sb *spec.Sandbox, view string, planned *spec.Sandbox, links *spec.Links) (*Table, error) {
	if sb == nil {
		return nil, fmt.Errorf("%w: nil sandbox", ErrInvalidSandbox)
	}
	var errs []error
	abs := func(field, p string) bool {
		switch {
		case p == "":
			errs = append(errs, fmt.Errorf("%w: %s is empty", ErrInvalidSandbox, field))
		case strings.ContainsRune(p, 0):
			errs = append(errs, fmt.Errorf("%w: %s %q contains a NUL byte", ErrInvalidSandbox, field, p))
		case !filepath.IsAbs(p) || filepath.Clean(p) != p:
			errs = append(errs, fmt.Errorf("%w: %s %q must be an absolute, clean path", ErrInvalidSandbox, field, p))
		default:
			return true
		}
		return false
	}

	var user []Entry
	if sb.Root != "" && abs("root", sb.Root) {
		src := sb.Root
		if view != "" {
			src = view
		}
		user = append(user, Entry{Target: sb.Root, Source: src, Readonly: sb.Readonly,
			Name: spec.WorkspaceZone, Origin: OriginWorkspace})
	}
	for i, m := range sb.Mounts {
		src, tgt := m.Source, m.Target
		if tgt == "" {
			tgt = src
		}
		okS := abs(fmt.Sprintf("mounts[%d].source", i), src)
		okT := abs(fmt.Sprintf("mounts[%d].target", i), tgt)
		if !okS || !okT {
			continue
		}
		user = append(user, Entry{Target: tgt, Source: src, Readonly: m.Readonly, Name: m.Name,
			Origin: OriginMount, Suffixes: append([]string(nil), m.Suffixes...), MaxFileBytes: m.MaxFileBytes})
	}
	for i := range sb.Mounts {
		if prob, fix := spec.MountPointProblem(sb, i); prob != "" {
			errs = append(errs, fmt.Errorf("%w: mounts[%d].target %s; %s", ErrInvalidSandbox, i, prob, fix))
		}
	}
	seen := map[string]string{}
	for _, e := range user {
		if prev, dup := seen[e.Target]; dup {
			errs = append(errs, fmt.Errorf("%w: target %s is used by both the %s and a %s; give each mount its own target",
				ErrInvalidSandbox, e.Target, prev, e.Origin))
			continue
		}
		seen[e.Target] = e.Origin
	}

	var system []Entry
	for _, d := range spec.SystemDirs(sb) {
		system = append(system, Entry{Target: d, Source: d, Readonly: true, Origin: OriginSystem})
	}
	if sb.System.Kind == spec.SystemRootfs && abs("system.rootfs", sb.System.Rootfs) {
		system = append(system, Entry{Target: "/", Source: sb.System.Rootfs, Readonly: true, Origin: OriginSystem})
	}

	t := &Table{root: sb.Root, entries: user, sb: sb.Clone()}
	for _, e := range system {
		if _, shadowed := seen[e.Target]; !shadowed {
			t.entries = append(t.entries, e)
		}
	}
	sort.SliceStable(t.entries, func(i, j int) bool { return lessPath(t.entries[i].Target, t.entries[j].Target) })
	for _, d := range SyntheticDirs {
		if _, shadowed := seen[d]; !shadowed {
			t.synth = append(t.synth, d)
		}
	}

	for _, d := range append(append([]string(nil), sb.Deny...), spec.SystemSecrets(sb)...) {
		if abs("deny", d) {
			t.denyCfg = appendUnique(t.denyCfg, d)
		}
	}
	for _, p := range sb.Protect {
		if abs("protect", p) {
			t.protectCfg = appendUnique(t.protectCfg, p)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := t.addLinks(sb, planned, links); err != nil {
		return nil, err
	}
	// Matched: the configured lists and what spec.WithAliases adds for
	// git, as the kernel backends get it (what protected git configs
	// include, their core.hooksPath and the programs they name), so the
	// file tools and check refuse what the sandbox's processes are
	// refused. The aliases of every entry the table finds itself, on
	// host paths (expand).
	protectM := append(slices.Clone(t.protectCfg), t.protectLinks...)
	for _, p := range spec.GitProtect(sb) {
		if filepath.IsAbs(p) {
			protectM = appendUnique(protectM, p)
		}
	}
	t.denyS, t.denyH = t.expand(append(slices.Clone(t.denyCfg), t.denyLinks...))
	// The host's secrets are denied wherever a zone shows them (a mount of
	// /etc at /hostetc), whatever system says: matched as host paths
	// only, as spec.WithAliases masks them in the sandbox.
	for _, s := range spec.HostSecrets() {
		t.denyH = appendUnique(t.denyH, s)
	}
	t.protectS, t.protectH = t.expand(protectM)
	t.denyH = t.linkForms(t.denyH)
	t.protectH = t.linkForms(t.protectH)
	return t, nil
}

// addLinks sets the entries that hold the deny and protect rules of sb on
// what symlinks reach, as the sandbox holds them (spec.FindLinks, or
// links when they hold for sb), or those planned lists beyond sb's.
func (t *Table) addLinks(sb, planned *spec.Sandbox, links *spec.Links) error {
	if planned != nil {
		for _, d := range planned.Deny {
			if !slices.Contains(sb.Deny, d) && filepath.IsAbs(d) {
				t.denyLinks = appendUnique(t.denyLinks, d)
			}
		}
		for _, p := range planned.Protect {
			if !slices.Contains(sb.Protect, p) && filepath.IsAbs(p) {
				t.protectLinks = appendUnique(t.protectLinks, p)
			}
		}
		return nil
	}
	if !links.For(sb) {
		var err error
		if links, err = spec.FindLinks(sb); err != nil {
			return fmt.Errorf("deny and protect on what symlinks reach: %w", err)
		}
	}
	t.links = links
	t.denyLinks, t.protectLinks = links.Entries()
	return nil
}

// expand returns, for the configured paths, the sandbox paths and host
// paths to match: each path itself (as a sandbox path and, fail-closed, as a
// host path), its lexical host mapping, and where it resolves through
// symbolic links now, as the kernel resolves a mask or a read-only rebind
// when the sandbox is set up.
func (t *Table) expand(paths []string) (sandbox, host []string) {
	for _, p := range paths {
		sandbox = appendUnique(sandbox, p)
		host = appendUnique(host, p)
		if e := t.lookup(p); e != nil {
			host = appendUnique(host, hostOfEntry(e, p))
		}
		if r, err := t.walk("resolve", p, p, false); err == nil {
			sandbox = appendUnique(sandbox, r.sandbox)
			host = appendUnique(host, r.host)
		}
	}
	return sandbox, host
}

// linkForms adds to the host paths list their form under every entry
// whose source goes through a symbolic link: the tools and the resolver
// name a file under such an entry by the source as written (/tmp/etc-link/
// shadow), while deny and protect name the file itself (/etc/shadow), as
// the kernel's masks do (spec.WithAliases resolves both).
func (t *Table) linkForms(list []string) []string {
	out := list
	for _, e := range t.entries {
		real, err := filepath.EvalSymlinks(e.Source)
		if err != nil || real == e.Source {
			continue
		}
		for _, h := range list {
			switch {
			case isUnder(h, real):
				out = appendUnique(out, hostOfEntry(&Entry{Target: real, Source: e.Source}, h))
			case isUnder(real, h):
				out = appendUnique(out, e.Source)
			}
		}
	}
	return out
}

// Entries returns the table's entries, parents before children.
func (t *Table) Entries() []Entry {
	out := make([]Entry, len(t.entries))
	for i, e := range t.entries {
		e.Suffixes = append([]string(nil), e.Suffixes...)
		out[i] = e
	}
	return out
}

// Deny returns the configured deny paths (sb.Deny plus the host system
// secrets), sorted.
func (t *Table) Deny() []string { return sortedCopy(t.denyCfg) }

// Protect returns the configured protect paths, sorted.
func (t *Table) Protect() []string { return sortedCopy(t.protectCfg) }

// ReadableRoots lists the readable roots for messages, as "/home/u/proj
// (rw)" and "/usr (ro)", parents before children.
func (t *Table) ReadableRoots() []string {
	var out []string
	for _, e := range t.entries {
		mode := "rw"
		if e.Readonly {
			mode = "ro"
		}
		out = append(out, fmt.Sprintf("%s (%s)", e.Target, mode))
	}
	return out
}

// WritableRoots lists the writable roots for messages, each with the deny
// and protect paths and read-only mounts beneath it that are not writable:
// "/work (except /work/.git/hooks, /work/.git/config)".
func (t *Table) WritableRoots() []string {
	var out []string
	for i := range t.entries {
		e := &t.entries[i]
		if e.Readonly {
			continue
		}
		var except []string
		for _, p := range slices.Concat(t.protectCfg, t.protectLinks, t.denyCfg, t.denyLinks) {
			if t.lookup(p) == e && p != e.Target {
				except = appendUnique(except, p)
			} else if p == e.Target || isUnder(e.Target, p) {
				except = nil
				e = nil // the whole root is denied or protected
				break
			}
		}
		if e == nil {
			continue
		}
		for j := range t.entries {
			n := &t.entries[j]
			if n.Readonly && n != e && isUnder(n.Target, e.Target) && t.lookupExcept(n.Target, n) == e {
				except = appendUnique(except, n.Target)
			}
		}
		if len(except) == 0 {
			out = append(out, e.Target)
			continue
		}
		out = append(out, fmt.Sprintf("%s (except %s)", e.Target, shortList(except)))
	}
	return out
}

// maxListed is how many exceptions a message lists before it counts the
// rest: a denial is read by a person or a model that must act on it, and
// the default profile protects some twenty-five paths.
const maxListed = 5

// shortList joins list, naming at most maxListed and counting the rest.
func shortList(list []string) string {
	if len(list) <= maxListed {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more; cordon explain lists them", strings.Join(list[:maxListed], ", "), len(list)-maxListed)
}

// SyntheticDir returns the directory the sandbox makes up (one of
// SyntheticDirs: its private /tmp, /proc, /dev) that holds the absolute
// sandbox path p, or "" when p is in none or an entry covers it.
func (t *Table) SyntheticDir(p string) string {
	p = filepath.Clean(p)
	for _, s := range t.synth {
		if best := t.lookupExcept(p, nil); isUnder(p, s) && (best == nil || len(s) > len(best.Target)) {
			return s
		}
	}
	return ""
}

// lookup returns the entry whose target is the longest prefix of p, or nil
// when p is under no entry or under a synthetic directory that is longer.
func (t *Table) lookup(p string) *Entry {
	best := t.lookupExcept(p, nil)
	for _, s := range t.synth {
		if isUnder(p, s) && (best == nil || len(s) > len(best.Target)) {
			return nil
		}
	}
	return best
}

// lookupExcept is lookup without the synthetic directories, ignoring skip.
func (t *Table) lookupExcept(p string, skip *Entry) *Entry {
	var best *Entry
	for i := range t.entries {
		e := &t.entries[i]
		if e == skip || !isUnder(p, e.Target) {
			continue
		}
		if best == nil || len(e.Target) > len(best.Target) {
			best = e
		}
	}
	return best
}

// isScaffold reports whether p is a strict ancestor of some entry's target:
// a directory that exists in the sandbox only to hold mount points.
func (t *Table) isScaffold(p string) bool {
	for _, e := range t.entries {
		if e.Target != p && isUnder(e.Target, p) {
			return true
		}
	}
	return false
}

// hostOf maps the sandbox path p, which must be under e.Target, to the host.
func hostOf(e *Entry, p string) string {
	rel := relTo(p, e.Target)
	if rel == "" {
		return e.Source
	}
	return filepath.Join(e.Source, rel)
}

// hostOfEntry is hostOf of the deny or protect entry p: a pattern's rest
// is joined onto the source escaped, so that pattern characters in the
// source's path match only themselves (spec.WithAliases does the same).
func hostOfEntry(e *Entry, p string) string {
	if !spec.IsPattern(p) {
		return hostOf(e, p)
	}
	rel := relTo(p, e.Target)
	if rel == "" {
		return spec.EscapePattern(e.Source)
	}
	return filepath.Join(spec.EscapePattern(e.Source), rel)
}

// relTo returns p relative to base ("" when equal); p must be under base.
func relTo(p, base string) string {
	if p == base {
		return ""
	}
	if base == "/" {
		return p[1:]
	}
	return p[len(base)+1:]
}

// isUnder reports whether the clean absolute path p is base or beneath it.
func isUnder(p, base string) bool {
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == base || (strings.HasPrefix(p, base) && p[len(base)] == '/')
}

// matchUnder returns the first of list that p is equal to or beneath. It
// matches deny and protect lists, so it folds case where the filesystem
// does (macOS): there `.ENV` is `.env`, and a deny must hold for both.
func matchUnder(p string, list []string) string {
	fp := foldCase(p)
	for _, l := range list {
		if spec.IsPattern(l) {
			if spec.MatchUnder(foldCase(l), fp) {
				return l
			}
			continue
		}
		if isUnder(fp, foldCase(l)) {
			return l
		}
	}
	return ""
}

// lessPath orders clean paths component by component, so that a parent
// always comes right before its children.
func lessPath(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

func appendUnique(list []string, s string) []string {
	for _, l := range list {
		if l == s {
			return list
		}
	}
	return append(list, s)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
