package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// Policy is what the classifier asks of the sandbox's mount table
// (*mounts.Table implements it): nil when the access is allowed, otherwise a
// typed error whose message says what IS allowed.
type Policy interface {
	Check(path string, write bool) error
}

// Denial is a failure the sandbox policy explains.
type Denial struct {
	// Path is the blocked path, or "" for a network denial.
	Path string
	// Detail is the message for the reader: what was blocked and what IS
	// allowed.
	Detail string
}

// errnoKind is the kind of error a stderr line reports.
type errnoKind int

const (
	errNone errnoKind = iota
	errReadOnly
	errAccess
	errNotFound
	// errNoParent is ENOENT while creating a file: its directory is missing.
	errNoParent
	// errBusy is EBUSY: a rename or removal of a mount point, which the
	// sandbox uses to keep deny and protect paths in place.
	errBusy
	// errRead is EACCES/EPERM or ENOENT on a line that is not about a
	// write, where only a read the policy refuses explains it.
	errRead
)

// errnoWordings maps the wordings of EROFS, EACCES/EPERM and ENOENT used by
// libc (shell, coreutils, git), Python, Node and Go to their kind. They are
// matched case-insensitively.
var errnoWordings = []struct {
	text string
	kind errnoKind
}{
	{"read-only file system", errReadOnly},
	{"erofs", errReadOnly},
	{"permission denied", errAccess},
	{"operation not permitted", errAccess},
	{"eacces", errAccess},
	{"eperm", errAccess},
	{"directory nonexistent", errNoParent},
	{"no such file or directory", errNotFound},
	{"no such file", errNotFound}, // dash: "sh: 1: cannot open x: No such file"
	// git, when the gitdir a .git file names is hidden:
	// "fatal: not a git repository: /r/.git/worktrees/w".
	{"not a git repository: ", errNotFound},
	{"enoent", errNotFound},
	{"cannot stat", errNotFound},
	{"device or resource busy", errBusy},
	{"ebusy", errBusy},
}

// networkWordings are failures that a disabled network explains.
var networkWordings = []string{
	"network is unreachable",
	"could not resolve host",
	"temporary failure in name resolution",
	"name or service not known",
	"no address associated with hostname",
	"getaddrinfo enotfound",
	"getaddrinfo eai_again",
	"enetunreach",
	"failed to establish a new connection",
	"no such host",
	"could not resolve hostname",
	"unable to resolve host",
	"network unreachable",
	"nodename nor servname provided", // macOS's getaddrinfo
}

// MentionsNetworkFailure reports whether a line of stderr has a wording of
// a failed name lookup or an unreachable network: what a program that went
// around a macOS sandbox's proxy meets (see package darwin).
func MentionsNetworkFailure(stderr string) bool {
	lower := strings.ToLower(stderr)
	for _, w := range networkWordings {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// quoted matches the quoted names tools put paths in: 'x', "x", `x' and ‘x’.
var quoted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("'([^']+)'|\"([^\"]+)\"|`([^']+)'|‘([^’]+)’") })

// bare matches an unquoted path-looking token: something with a slash, as
// in "bash: /usr/x: Read-only file system" or "open /usr/x: permission
// denied".
var bare = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s:=,(])((?:\.{0,2}/|~/|[\w.@+-]+/)[^\s:'",()]*)`)
})

// progPrefix matches the "PROGRAM: " or "PROGRAM: LINE: " prefix that shells
// and coreutils put before their message ("/bin/sh: 1: cannot create ...").
var progPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\S+?: (?:line )?(?:\d+: )?`) })

// verbObject matches the object of coreutils' and shells' "cannot VERB X:"
// wordings, where X may be a bare relative name ("sh: 1: cannot create x:").
var verbObject = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`cannot (?:create|touch|remove|open|stat|access|move|overwrite|write to)(?: (?:directory|regular file|symbolic link|non-directory))? ([^\s:'"‘’]+):`)
})

// candidatePaths returns the paths named on one stderr line, most specific
// first: quoted names, the X of "PROGRAM: X: message", the object of
// "cannot VERB X:", then any path-looking token. The program name that
// prefixes the message is never a candidate when the rest names a path.
func candidatePaths(line string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = strings.TrimRight(p, ".,;")
		if p == "" || seen[p] || strings.Contains(p, "://") {
			return
		}
		seen[p] = true
		out = append(out, p)
	}
	rest := line
	if loc := progPrefix().FindStringIndex(line); loc != nil && loc[1] < len(line) {
		rest = line[loc[1]:]
	}
	for _, m := range quoted().FindAllStringSubmatch(rest, -1) {
		for _, g := range m[1:] {
			if g != "" {
				add(g)
			}
		}
	}
	if tok, _, ok := strings.Cut(rest, ": "); ok && tok != "" && !strings.ContainsAny(tok, " \t'\"") {
		add(tok)
	}
	for _, m := range verbObject().FindAllStringSubmatch(rest, -1) {
		add(m[1])
	}
	for _, p := range pathsIn(rest) {
		add(p)
	}
	if len(out) == 0 && rest != line {
		for _, p := range pathsIn(line) {
			add(p)
		}
	}
	return out
}

// pathsIn returns the unquoted path-looking tokens of line.
func pathsIn(line string) []string {
	var out []string
	for _, m := range bare().FindAllStringSubmatch(quoted().ReplaceAllString(line, " "), -1) {
		out = append(out, m[1])
	}
	return out
}

func lineKind(lower string) errnoKind {
	for _, w := range errnoWordings {
		if strings.Contains(lower, w.text) {
			return w.kind
		}
	}
	return errNone
}

// ClassifyDenial decides whether the sandbox policy explains a failed
// command, from the command's stderr. It extracts the paths named in
// read-only, permission and not-found errors, resolves relative ones against
// cwd, and asks the policy about each: it reports a denial only when the
// policy forbids the access (or, for "not found", when the path exists on the
// host but the sandbox hides it). A network failure is a denial only when the
// sandbox has no network. It returns false when the policy does not explain
// the failure.
func ClassifyDenial(p Policy, sb *spec.Sandbox, cwd, stderr string) (Denial, bool) {
	return classifyDenial(p, sb, cwd, stderr, false)
}

// ClassifyReadDenial is ClassifyDenial believing only what stderr says of
// reads: a write's refusal is the broker's to record.
func ClassifyReadDenial(p Policy, sb *spec.Sandbox, cwd, stderr string) (Denial, bool) {
	return classifyDenial(p, sb, cwd, stderr, true)
}

// classifyDenial is ClassifyDenial; readsOnly believes only what stderr
// says of reads (see readDenials): a write's refusal is the broker's to
// record.
func classifyDenial(p Policy, sb *spec.Sandbox, cwd, stderr string, readsOnly bool) (Denial, bool) {
	lines := strings.Split(stderr, "\n")
	for _, line := range lines {
		lower := strings.ToLower(line)
		kind := lineKind(lower)
		if kind == errNone {
			continue
		}
		if readsOnly {
			if kind == errReadOnly || kind == errBusy || kind == errNoParent || isWriteLine(line) {
				continue
			}
			if kind == errAccess {
				kind = errRead
			}
		}
		for _, c := range candidatePaths(line) {
			path := absolutize(c, cwd, sb)
			if path == "" {
				continue
			}
			if d, ok := explain(p, sb, path, line, kind); ok {
				return d, true
			}
		}
	}
	if sb != nil && !sb.Network.Enabled {
		for _, line := range lines {
			lower := strings.ToLower(line)
			for _, w := range networkWordings {
				if strings.Contains(lower, w) {
					return Denial{Detail: "network access is disabled for this sandbox (network: false); " +
						"commands that need the network must run with a sandbox that allows it"}, true
				}
			}
		}
	}
	return Denial{}, false
}

// readPrefixes are the tools whose permission errors are about reading.
var readPrefixes = []string{"cat:", "head:", "tail:", "less:", "more:", "grep:", "sort:", "wc:", "diff:", "md5sum:", "sha256sum:", "od:", "xxd:"}

// isReadLine reports whether a permission error on this stderr line is about
// reading, not writing.
func isReadLine(line string) bool {
	l := strings.ToLower(strings.TrimSpace(line))
	for _, p := range readPrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(l, "for reading") || strings.Contains(l, "cannot read") ||
		strings.Contains(l, "cannot open directory") || strings.Contains(l, "failed to read")
}

// writeWordings are the wordings of tools that were creating, changing or
// removing a path when they failed ("mkdir: cannot create directory",
// "touch: cannot touch", "sh: 1: cannot create", Python's "for writing").
var writeWordings = []string{"cannot create", "cannot touch", "cannot make", "mkdir:", "can't create", "for writing",
	"cannot write", "cannot overwrite", "cannot move", "cannot remove", "cannot link", "failed to create"}

// isWriteLine reports whether a not-found error on this stderr line is
// about creating or changing a path, not reading it.
func isWriteLine(line string) bool {
	l := strings.ToLower(line)
	for _, w := range writeWordings {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func absolutize(p, cwd string, sb *spec.Sandbox) string {
	if strings.HasPrefix(p, "~/") {
		return "" // the sandbox's HOME is not the host's; do not guess
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if cwd == "" && sb != nil {
		cwd = sb.Root
	}
	if cwd == "" {
		return ""
	}
	return filepath.Join(cwd, p)
}

func explain(p Policy, sb *spec.Sandbox, path, line string, kind errnoKind) (Denial, bool) {
	switch kind {
	case errRead:
		if err := p.Check(path, false); err != nil {
			return Denial{Path: path, Detail: err.Error()}, true
		}
	case errAccess:
		if isReadLine(line) {
			// A read that failed: only a path the policy hides explains
			// it; a readable path refused by host permissions does not.
			if err := p.Check(path, false); err != nil {
				return Denial{Path: path, Detail: err.Error()}, true
			}
			return Denial{}, false
		}
		if !isWriteLine(line) {
			// A wording that does not say which (Python's
			// PermissionError, Node's "EACCES: permission denied,
			// open"): a deny path refuses reads, so a read it was.
			if pe := (*mounts.PathError)(nil); errors.As(p.Check(path, false), &pe) && pe.Rule == "deny" {
				return Denial{Path: path, Detail: pe.Error()}, true
			}
		}
		fallthrough
	case errReadOnly:
		// A write was refused: the message says what IS writable, even
		// when the path is not readable either.
		if err := p.Check(path, true); err != nil {
			return Denial{Path: path, Detail: err.Error()}, true
		}
	case errBusy:
		if sb == nil {
			break
		}
		// A rename or removal of a guarded path or of a directory that
		// holds one: the mount that keeps it in place refuses.
		// Every sandbox path of a guarded host file is kept in place
		// (spec.WithAliases), so an alias explains it too.
		al := spec.WithAliases(sb)
		for _, g := range append(append([]string(nil), al.Protect...), al.Deny...) {
			if g == path || strings.HasPrefix(g, strings.TrimSuffix(path, "/")+"/") {
				detail := fmt.Sprintf("cannot move or remove %s: it is or holds %s, which the sandbox keeps in place", path, g)
				if err := p.Check(g, true); err != nil {
					detail += "; " + err.Error()
				}
				return Denial{Path: path, Detail: detail}, true
			}
		}
	case errNotFound, errNoParent:
		if err := p.Check(path, false); err != nil {
			// Hidden by the sandbox but present on the host (the path or,
			// for a file being created, its directory): the policy explains
			// the failure. A path missing on the host too is just a missing
			// file. A create ("cannot create", "Directory nonexistent") is
			// told what IS writable.
			if kind == errNoParent || isWriteLine(line) {
				if werr := p.Check(path, true); werr != nil {
					err = werr
				}
			}
			if _, serr := os.Lstat(path); serr == nil {
				detail := err.Error()
				if strings.Contains(strings.ToLower(line), "not a git repository: ") {
					gitdir := path
					if i := strings.Index(path, "/.git/"); i >= 0 {
						gitdir = path[:i+len("/.git")]
					}
					detail += "; this checkout's git metadata lies outside what the sandbox shows: to use git here, mount it (--mount " +
						gitdir + ":" + gitdir + ", with :ro to read only)"
				}
				return Denial{Path: path, Detail: detail}, true
			}
			// A deny path hides everything below it, at every sandbox
			// path that reaches it (an alias's sandbox path need not exist
			// on the host): the deny list explains the missing file.
			if pe := (*mounts.PathError)(nil); errors.As(err, &pe) && pe.Rule == "deny" {
				return Denial{Path: path, Detail: err.Error()}, true
			}
			if dir := filepath.Dir(path); dir != "/" && p.Check(dir, false) != nil {
				if _, serr := os.Lstat(dir); serr == nil {
					return Denial{Path: path, Detail: err.Error()}, true
				}
			}
		}
	}
	return Denial{}, false
}
