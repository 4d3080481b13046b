package darwin

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// DefaultTag is the tag Profile puts on deny rules when ProfileOptions.Tag is
// empty. A run uses a unique tag instead (see NewTag).
const DefaultTag = "cordon"

// ProfileOptions tunes Profile.
type ProfileOptions struct {
	// Tag is put on every deny rule as (with message "TAG"), so the
	// denials macOS logs can be tied to one run. It must be unique per run,
	// and may hold only letters, digits, '.', '_' and '-' (at most 64).
	// "" means DefaultTag.
	Tag string
	// ProxyPort is the port of the run's proxy on localhost (see
	// netguard.Proxy) when the sandbox has a network allow list: the
	// profile allows TCP to it and to nothing else. 0 in a profile
	// printed for review stands for the port a run chooses.
	ProxyPort int
	// ProxyConnect is the absolute path of a cordon executable whose
	// `proxy-connect` subcommand is ssh's ProxyCommand in a sandbox with
	// an allow list (see SetProxyConnect): the profile lets the sandbox
	// read and run that one file. "" adds nothing.
	ProxyConnect string
	// Canon canonicalizes an absolute path the way Seatbelt sees it. nil
	// means Canonicalize, the real one for this host. Tests pass a fixed
	// function so that profiles do not depend on the host.
	Canon func(string) string
}

// tagPattern is what a tag may look like: it goes into a string literal and
// into a log predicate, so it is kept to a harmless alphabet.
var tagPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// rule is one SBPL rule: (ACTION OPS... [FILTER] [(with message TAG)]).
type rule struct {
	action string
	ops    []string
	filter string
	tagged bool
}

// section is a commented group of rules.
type section struct {
	comment string
	rules   []rule
}

// area is a readable directory of the sandbox: the workspace, a mount, or
// a system directory.
type area struct {
	path string // as given
	rw   bool
}

// profileBuilder holds one profile being built.
type profileBuilder struct {
	sb      *spec.Sandbox
	canon   func(string) string
	tag     string
	network bool // network on after degradation
	// proxy: the network is on with an allow list, enforced by the
	// run's proxy at proxyPort.
	proxy        bool
	proxyPort    int
	proxyConnect string
	err          error

	areas   []area   // canonical paths, sorted parents first
	rwAreas []string // canonical paths of the rw areas
	denied  []string // canonical deny paths (sb.Deny and secrets), every spelling
	// deniedPatterns are the deny entries that are patterns (spec.IsPattern).
	deniedPatterns []string
}

// Profile returns the Seatbelt profile that enforces sb. It works on every
// OS. It returns an *UnenforceableError when sb asks for something Seatbelt
// cannot enforce (see Unsupported) and an error matching ErrUnsafeString
// when a path cannot be written safely into a profile.
func Profile(sb *spec.Sandbox, opts ProfileOptions) (string, error) {
	if sb == nil {
		return "", fmt.Errorf("%w: nil sandbox", ErrBadRequest)
	}
	if err := checkSandboxStrings(sb); err != nil {
		return "", err
	}
	if err := runner.Enforce(runner.BackendSeatbelt, sb, runner.HostFacts{}).Err(); err != nil {
		return "", err
	}
	tag := opts.Tag
	if tag == "" {
		tag = DefaultTag
	}
	if !tagPattern().MatchString(tag) {
		return "", fmt.Errorf("tag %q: %w: use 1 to 64 letters, digits, '.', '_' or '-'", tag, ErrUnsafeString)
	}
	canon := opts.Canon
	if canon == nil {
		canon = Canonicalize
	}
	b := &profileBuilder{
		sb:      sb,
		canon:   canon,
		tag:     tag,
		network: sb.Network.Enabled && len(sb.Network.Allow) == 0,
		// Enforce dropped an allow list it could not enforce.
		proxy:     sb.Network.Enabled && len(sb.Network.Allow) > 0,
		proxyPort: opts.ProxyPort,
	}
	if b.proxy && opts.ProxyConnect != "" {
		b.proxyConnect = b.canonical("proxy-connect executable", opts.ProxyConnect)
	}
	if b.proxyPort < 0 || b.proxyPort > 65535 {
		return "", fmt.Errorf("%w: proxy port %d", ErrBadRequest, b.proxyPort)
	}
	sections := b.build()
	if b.err != nil {
		return "", b.err
	}
	return b.render(sections)
}

// checkSandboxStrings refuses the sandbox's paths that cannot be written
// into a profile, before anything else is judged.
func checkSandboxStrings(sb *spec.Sandbox) error {
	paths := map[string][]string{"workspace": {sb.Root}, "deny path": sb.Deny, "protect path": sb.Protect, "system rootfs": {sb.System.Rootfs}}
	for _, m := range sb.Mounts {
		paths["mount"] = append(paths["mount"], m.Source, m.Target)
	}
	for _, what := range []string{"workspace", "mount", "deny path", "protect path", "system rootfs"} {
		for _, p := range paths[what] {
			if err := checkString(what, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// canonical returns p as Seatbelt sees it, after checking it can be written
// into the profile.
func (b *profileBuilder) canonical(what, p string) string {
	if b.err != nil {
		return p
	}
	if err := checkString(what, p); err != nil {
		b.err = err
		return p
	}
	if !filepath.IsAbs(p) {
		b.err = fmt.Errorf("%s %q: %w: the path is not absolute", what, p, ErrUnsafeString)
		return p
	}
	c := b.canon(filepath.Clean(p))
	if !filepath.IsAbs(c) {
		b.err = fmt.Errorf("%s %q: %w: it canonicalizes to %q, which is not absolute", what, p, ErrUnsafeString, c)
		return p
	}
	c = privateForm(filepath.Clean(c))
	if err := checkString(what, c); err != nil {
		b.err = err
	}
	return c
}

// denySpellings are the names a deny rule uses for p: every spelling, given
// and canonical, each with its /private alias. A deny can only ever be too
// wide, so it errs on the side of more names.
func (b *profileBuilder) denySpellings(what, p string) []string {
	c := b.canonical(what, p)
	out := withAlias(c)
	for _, s := range withAlias(filepath.Clean(p)) {
		out = appendUnique(out, s)
	}
	return out
}

func withAlias(p string) []string {
	if a := firmlinkAlias(p); a != "" {
		return []string{p, a}
	}
	return []string{p}
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// build computes the profile's sections in their order. Every allow of a
// file operation comes before the first file deny, so that the denies win
// under Seatbelt's last-match rule.
func (b *profileBuilder) build() []section {
	b.collectAreas()
	b.collectDenied()
	var out []section
	out = append(out, b.processSection(), b.machSection(), b.startupSection(), b.ancestorSection())
	out = append(out, b.areaSections()...)
	out = append(out, b.denySection(), b.protectSection(), b.guardSection(), b.networkSection())
	return out
}

func (b *profileBuilder) collectAreas() {
	sb := b.sb
	var raw []area
	if sb.Root != "" {
		raw = append(raw, area{path: sb.Root, rw: !sb.Readonly})
	}
	// fixed are macOS's own directories: they are spelled as macOS has them
	// (only /etc is a link there), not resolved against this host, which
	// may not be a Mac.
	fixed := map[string]bool{}
	user := map[string]bool{}
	for _, m := range sb.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		raw = append(raw, area{path: t, rw: !m.Readonly})
		user[t] = true
	}
	if sb.Root != "" {
		user[sb.Root] = true
	}
	if sb.System.Kind == spec.SystemHost {
		for _, d := range DarwinSystemDirs {
			if !user[d] {
				raw = append(raw, area{path: d})
				fixed[d] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, a := range raw {
		c := privateForm(a.path)
		if !fixed[a.path] {
			c = b.canonical("path", a.path)
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		b.areas = append(b.areas, area{path: c, rw: a.rw})
		if a.rw {
			b.rwAreas = append(b.rwAreas, c)
		}
	}
	// Parents first; at the same depth the order is the sandbox's own
	// (workspace, mounts, system), so that no name can move a rule.
	sort.SliceStable(b.areas, func(i, j int) bool { return depth(b.areas[i].path) < depth(b.areas[j].path) })
}

func (b *profileBuilder) collectDenied() {
	for _, d := range b.sb.Deny {
		if spec.IsPattern(d) {
			b.deniedPatterns = append(b.deniedPatterns, d)
		}
		for _, s := range b.denySpellings("deny path", d) {
			b.denied = appendUnique(b.denied, s)
		}
	}
}

// secretRegexes are the regexes of the host secrets, when the host system is
// visible, in both spellings of /etc.
func (b *profileBuilder) secretRegexes() []string {
	if b.sb.System.Kind != spec.SystemHost {
		return nil
	}
	var out []string
	for _, s := range darwinSecrets {
		for _, sp := range withAlias(privateForm(s)) {
			out = append(out, globRegex(sp))
		}
	}
	return out
}

// globRegex is pathRegex for a path whose '*' matches within one name.
func globRegex(p string) string {
	parts := strings.Split(p, "*")
	re := ""
	for i, part := range parts {
		r := pathRegex(part, false)
		r = strings.TrimSuffix(strings.TrimPrefix(r, "^"), "$")
		if i > 0 {
			re += "[^/]*"
		}
		re += r
	}
	return "^" + re + "(/.*)?$"
}

func (b *profileBuilder) processSection() section {
	return section{
		comment: "Processes: fork and exec; signals and process information only within this sandbox; sysctl reads. No hard links: Seatbelt judges a file by the name it is opened with, so a new link would be a second name for a denied or protected file.",
		rules: []rule{
			{action: "deny", ops: []string{"file-link"}, tagged: true},
			{action: "allow", ops: []string{"process-fork"}},
			{action: "allow", ops: []string{"process-exec"}},
			{action: "deny", ops: []string{"process-info*"}, tagged: true},
			{action: "allow", ops: []string{"process-info*"}, filter: "(target same-sandbox)"},
			{action: "allow", ops: []string{"signal"}, filter: "(target same-sandbox)"},
			{action: "allow", ops: []string{"sysctl-read"}},
		},
	}
}

func (b *profileBuilder) machSection() section {
	s := section{comment: "Mach services a command-line process needs: logging, notifications, user and group lookups."}
	for _, name := range machServices {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"mach-lookup"}, filter: "(global-name " + quote(name) + ")"})
	}
	s.rules = append(s.rules, rule{action: "allow", ops: []string{"ipc-posix-shm-read-data"},
		filter: "(ipc-posix-name " + quote("apple.shm.notification_center") + ")"})
	return s
}

// startupPaths are the directories and files read by startupSection as
// subpaths: startupReads, DeveloperDirs with `system: host`, networkReads
// with the network on.
func (b *profileBuilder) startupPaths() []string {
	out := append([]string(nil), startupReads...)
	if b.sb.System.Kind == spec.SystemHost {
		out = append(out, DeveloperDirs...)
	}
	switch {
	case b.network:
		out = append(out, networkReads...)
	case b.proxy:
		out = append(out, certificateReads...)
	}
	return out
}

func (b *profileBuilder) startupSection() section {
	s := section{comment: "System files a process needs to start: dyld and its shared cache, system libraries, locale, terminfo, time zones, a few devices."}
	read := func(op string, filter string) {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read*"}, filter: "(" + op + " " + filter + ")"})
	}
	for _, p := range b.startupPaths() {
		read("subpath", quote(p))
	}
	for _, p := range startupLiterals {
		read("literal", quote(p))
	}
	for _, p := range devReadWrite {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read*", "file-write*"}, filter: "(literal " + quote(p) + ")"})
	}
	s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read*", "file-write*"}, filter: "(subpath " + quote("/dev/fd") + ")"})
	for _, p := range devIoctl {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-ioctl"}, filter: "(literal " + quote(p) + ")"})
	}
	s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-ioctl"}, filter: "(regex " + regexLiteral(ttyRegex) + ")"})
	return s
}

// ancestorSection lets a process stat (not list or read) every directory
// above a readable root, so that realpath, getcwd and shells can walk
// down to it. Directories inside a deny path are left out.
func (b *profileBuilder) ancestorSection() section {
	var roots []string
	for _, a := range b.areas {
		roots = append(roots, withAlias(a.path)...)
	}
	for _, p := range b.startupPaths() {
		roots = append(roots, withAlias(p)...)
	}
	set := map[string]bool{}
	for _, r := range roots {
		for _, a := range ancestors(r) {
			if !b.inDenied(a) {
				set[a] = true
			}
		}
	}
	var list []string
	for a := range set {
		list = append(list, a)
	}
	sort.Strings(list)
	s := section{comment: "Metadata (stat, not listing) of the directories above every readable root."}
	for _, a := range list {
		s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read-metadata"}, filter: "(literal " + quote(a) + ")"})
	}
	return s
}

// inDenied reports whether p lies in a deny path, ignoring case as the
// filesystem does.
func (b *profileBuilder) inDenied(p string) bool {
	lp := strings.ToLower(p)
	for _, d := range b.denied {
		if isUnder(lp, strings.ToLower(d)) {
			return true
		}
	}
	return false
}

// inRW reports whether p lies in a read-write area.
func (b *profileBuilder) inRW(p string) bool {
	for _, w := range b.rwAreas {
		if isUnder(p, w) {
			return true
		}
	}
	return false
}

// areaSections allow reading every area and writing the read-write ones,
// parents before children, and deny writing a read-only area that lies in
// a writable one; a child's rule comes later and so wins inside it.
func (b *profileBuilder) areaSections() []section {
	s := section{comment: "The workspace, the mounts and the system directories: read everywhere, write where read-write; parents first, so a nested mount's own mode wins inside it."}
	for _, a := range b.areas {
		for _, sp := range withAlias(a.path) {
			s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-read*"}, filter: "(subpath " + quote(sp) + ")"})
		}
		if a.rw {
			for _, sp := range withAlias(a.path) {
				s.rules = append(s.rules, rule{action: "allow", ops: []string{"file-write*"}, filter: "(subpath " + quote(sp) + ")"})
			}
		} else if b.inRWStrictly(a.path) {
			for _, sp := range withAlias(a.path) {
				s.rules = append(s.rules, rule{action: "deny", ops: []string{"file-write*"}, filter: "(regex " + regexLiteral(pathRegex(sp, true)) + ")", tagged: true})
			}
		}
	}
	return []section{s}
}

// inRWStrictly reports whether p lies strictly below a read-write area.
func (b *profileBuilder) inRWStrictly(p string) bool {
	for _, w := range b.rwAreas {
		if p != w && isUnder(p, w) {
			return true
		}
	}
	return false
}

func (b *profileBuilder) denySection() section {
	s := section{comment: "Deny paths: neither readable nor writable, whatever mount holds them (case-insensitive, every spelling)."}
	ops := []string{"file-read*", "file-write*", "process-exec"}
	for _, d := range b.denied {
		s.rules = append(s.rules, rule{action: "deny", ops: ops, filter: "(regex " + regexLiteral(pathRegex(d, true)) + ")", tagged: true})
	}
	for _, d := range b.deniedPatterns {
		lit, rest := splitPattern(d)
		for _, sp := range b.denySpellings("deny path", lit) {
			re := patternRegex(sp, rest, true)
			s.rules = append(s.rules, rule{action: "deny", ops: ops, filter: "(regex " + regexLiteral(re) + ")", tagged: true})
		}
	}
	for _, re := range b.secretRegexes() {
		s.rules = append(s.rules, rule{action: "deny", ops: ops, filter: "(regex " + regexLiteral(re) + ")", tagged: true})
	}
	return s
}

func (b *profileBuilder) protectSection() section {
	s := section{comment: "Protect paths: readable, never writable, even when missing at start."}
	for _, p := range b.sb.Protect {
		for _, re := range b.entryRegexes("protect path", p, true) {
			s.rules = append(s.rules, rule{action: "deny", ops: []string{"file-write*"}, filter: "(regex " + regexLiteral(re) + ")", tagged: true})
		}
	}
	return s
}

// guardSection pins the directories above every deny path, protect path and
// nested read-only mount, wherever the sandbox could otherwise write them:
// without it, renaming a parent away would carry the guarded tree out from
// under its rule, and creating a missing parent could plant one.
func (b *profileBuilder) guardSection() section {
	var guarded []string
	guarded = append(guarded, b.denied...)
	// A pattern's own parents are every directory of a kind (every .git
	// under the workspace): pinning them would refuse git init and clone,
	// so only its literal directory is guarded (the README names the
	// rename window this leaves on macOS).
	for _, p := range b.sb.Protect {
		if spec.IsPattern(p) {
			lit, _ := splitPattern(p)
			guarded = append(guarded, b.denySpellings("protect path", lit+"/x")...)
		}
		guarded = append(guarded, b.denySpellings("protect path", p)...)
	}
	for _, a := range b.areas {
		if !a.rw && b.inRWStrictly(a.path) {
			guarded = append(guarded, withAlias(a.path)...)
		}
	}
	set := map[string]bool{}
	for _, g := range guarded {
		for _, a := range ancestors(g) {
			if a != "/" && b.inRW(a) {
				set[a] = true
			}
		}
	}
	var list []string
	for a := range set {
		list = append(list, a)
	}
	sort.Strings(list)
	s := section{comment: "Parents of deny, protect and nested read-only paths: not renamable, removable or creatable, so nothing can move a guarded tree out from under its rule."}
	for _, a := range list {
		s.rules = append(s.rules, rule{action: "deny", ops: []string{"file-write*"}, filter: "(regex " + regexLiteral(pathRegex(a, false)) + ")", tagged: true})
	}
	return s
}

// render writes the profile text and checks every literal's length.
func (b *profileBuilder) render(sections []section) (string, error) {
	var out strings.Builder
	out.WriteString(";; cordon Seatbelt profile (generated). Seatbelt applies the last rule that matches.\n")
	out.WriteString("(version 1)\n")
	out.WriteString("(deny default (with message " + quote(b.tag) + "))\n")
	for _, s := range sections {
		if len(s.rules) == 0 {
			continue
		}
		out.WriteString("\n;; " + s.comment + "\n")
		for _, r := range s.rules {
			if err := checkLiteralLengths(r.filter); err != nil {
				return "", err
			}
			out.WriteString("(" + r.action + " " + strings.Join(r.ops, " "))
			if r.filter != "" {
				out.WriteString(" " + r.filter)
			}
			if r.tagged {
				out.WriteString(" (with message " + quote(b.tag) + ")")
			}
			out.WriteString(")\n")
		}
	}
	return out.String(), nil
}

// checkLiteralLengths refuses a filter whose string is longer than
// sandbox-exec accepts.
func checkLiteralLengths(filter string) error {
	start := strings.IndexByte(filter, '"')
	if start < 0 {
		return nil
	}
	if n := len(filter) - start; n > maxStringBytes {
		return fmt.Errorf("%w: a path is too long for a Seatbelt profile (%d bytes in %.60s...; at most %d): use a shorter path or run on Linux",
			ErrUnsafeString, n, filter, maxStringBytes)
	}
	return nil
}
