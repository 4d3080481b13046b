package mounts

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
)

// DefaultMaxChars is how many characters (runes) Read returns when its
// maxChars is zero or below.
const DefaultMaxChars = 200000

// MaxReadChars caps Read's maxChars, so one call cannot make the reader hold
// an arbitrary amount of memory.
const MaxReadChars = 10_000_000

// MaxGlobstars caps the "**" segments of a List pattern: matching is
// exponential in their number.
const MaxGlobstars = 2

// MaxListResults is the most paths List returns; beyond it List also returns
// ErrTooMany.
const MaxListResults = 10000

// MaxListScanned is the most directory entries one List call looks at.
const MaxListScanned = 1000000

// maxListDepth bounds how deep List descends (each level holds a
// descriptor).
const maxListDepth = 256

// testHookBeforeOpen, when set by a test, runs after a file tool has resolved
// and checked its path and before it opens anything: the window in which an
// attacker would swap a symbolic link in.
var testHookBeforeOpen func(op, hostPath string)

// Read returns the text of the regular file at path, cut after maxChars
// characters (runes; DefaultMaxChars when maxChars <= 0). When it cuts, it
// ends the text with a line that says so and gives the file's size. Read
// applies the deny list, the mount's suffixes and its size limit, and opens
// the file through held descriptors without following any symbolic link
// that was not there when the path was resolved (ErrChanged).
func (t *Table) Read(path string, maxChars int) (string, error) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	if maxChars > MaxReadChars {
		maxChars = MaxReadChars
	}
	r, err := t.resolve("read", path, false)
	if err != nil {
		return "", err
	}
	if err := t.CheckSources(); err != nil {
		return "", &PathError{Op: "read", Path: path, Err: ErrUnsafeSource, Rule: err.Error()}
	}
	if r.rel == "" && !fileMount(r.e) {
		return "", &PathError{Op: "read", Path: path, Err: ErrNotFile, Rule: "a directory; use List"}
	}
	if err := t.checkSuffix("read", path, r); err != nil {
		return "", err
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen("read", r.host)
	}
	f, size, err := openRead(r)
	if err != nil {
		return "", t.toolError("read", path, err)
	}
	defer f.Close() //nolint:errcheck // read-only descriptor
	if err := t.checkSize("read", path, r, size); err != nil {
		return "", err
	}
	text, cut, err := readCut(f, maxChars)
	if err != nil {
		return "", &PathError{Op: "read", Path: path, Err: err}
	}
	if why := binaryText(text); why != "" {
		return "", &PathError{Op: "read", Path: path, Err: ErrBinary, Rule: why}
	}
	if cut {
		text += fmt.Sprintf("\n[cordon: cut after %d characters; the file has %d bytes]", maxChars, size)
	}
	return text, nil
}

// Write replaces (or creates) the regular file at path with content,
// atomically: a temporary file in the same directory, opened O_EXCL and
// O_NOFOLLOW through the directory's descriptor, is written, synced and
// renamed over the target. Missing parent directories are created, each
// checked against the deny and protect lists. An existing file keeps its
// permission bits. Write applies the write rules, the mount's suffixes and
// its size limit (the content's length in bytes).
func (t *Table) Write(path, content string) error {
	r, err := t.resolve("write", path, true)
	if err != nil {
		return err
	}
	if err := t.CheckSources(); err != nil {
		return &PathError{Op: "write", Path: path, Err: ErrUnsafeSource, Rule: err.Error()}
	}
	if r.rel == "" || strings.HasSuffix(path, "/") || strings.HasSuffix(path, "/.") || strings.HasSuffix(path, "/..") {
		return &PathError{Op: "write", Path: path, Err: ErrNotFile, Rule: "a directory path; give a file name"}
	}
	if err := t.checkSuffix("write", path, r); err != nil {
		return err
	}
	if fs := t.sb.Limits.FileSize; fs > 0 && int64(len(content)) > fs {
		return &PathError{Op: "write", Path: path, Err: ErrTooLarge, Size: int64(len(content)), Limit: fs, where: "limits.file_size"}
	}
	if err := t.checkSize("write", path, r, int64(len(content))); err != nil {
		return err
	}
	if err := t.checkGitFile("write", path, r, content); err != nil {
		return err
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen("write", r.host)
	}
	if err := t.writeAtomic(r, content); err != nil {
		return t.toolError("write", path, err)
	}
	return nil
}

// List returns the sandbox paths under the directory path whose path
// relative to it matches pattern, sorted. The pattern is a slash-separated
// glob: each segment as path.Match, and "**" matching any number of
// segments ("**/*.go"); "" means "*", the directory's own entries. List
// walks the sandbox namespace (mount points included), skips denied paths
// and paths outside the sandbox, and lists symbolic links without following
// them. It stops at MaxListResults matches and then returns them together
// with an ErrTooMany error.
func (t *Table) List(path, pattern string) ([]string, error) {
	segs, err := splitPattern(pattern)
	if err != nil {
		return nil, &PathError{Op: "list", Path: path, Err: err}
	}
	r, err := t.resolve("list", path, false)
	if err != nil {
		return nil, err
	}
	if err := t.CheckSources(); err != nil {
		return nil, &PathError{Op: "list", Path: path, Err: ErrUnsafeSource, Rule: err.Error()}
	}
	l := &lister{t: t, segs: segs}
	if err := t.listWalk(l, r); err != nil {
		sort.Strings(l.out)
		return l.out, t.toolError("list", path, err)
	}
	sort.Strings(l.out)
	return l.out, nil
}

// lister is the state of one List call.
type lister struct {
	t       *Table
	segs    []string
	out     []string
	scanned int
}

// errLimit is returned by the list walk when a limit is reached.
type errLimit struct{ what string }

func (e *errLimit) Error() string { return e.what }

// visit records one entry of the walk and reports whether to descend into it
// (when it is a directory).
func (l *lister) visit(sandboxPath string, rel []string) (descend bool, err error) {
	l.scanned++
	if l.scanned > MaxListScanned {
		return false, &errLimit{fmt.Sprintf("scanned more than %d entries", MaxListScanned)}
	}
	if matchSegs(l.segs, rel) {
		if len(l.out) >= MaxListResults {
			return false, &errLimit{fmt.Sprintf("more than %d matches; the first %d are returned", MaxListResults, MaxListResults)}
		}
		l.out = append(l.out, sandboxPath)
	}
	return len(rel) < maxListDepth && couldMatchBelow(l.segs, rel), nil
}

// childMounts returns the names of the entries beneath the sandbox
// directory dir, one level down: the mount points and scaffold directories
// that the sandbox shows there whatever the host directory holds.
func (t *Table) childMounts(dir string) []string {
	var names []string
	for _, e := range t.entries {
		if e.Target == dir || !isUnder(e.Target, dir) {
			continue
		}
		rest := relTo(e.Target, dir)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		names = appendUnique(names, rest)
	}
	return names
}

// childKind says how the list walk treats the sandbox path child of a
// directory held by entry parent.
type childKind int

const (
	childSkip     childKind = iota // denied, outside or synthetic
	childHost                      // in the parent's host directory
	childMount                     // the root of another entry
	childScaffold                  // a directory that only holds mount points
)

func (t *Table) classifyChild(child string, parent *Entry) (childKind, *Entry) {
	if matchUnder(child, t.denyS) != "" {
		return childSkip, nil
	}
	e := t.lookup(child)
	switch {
	case e == nil && t.isScaffold(child):
		return childScaffold, nil
	case e == nil:
		return childSkip, nil
	case matchUnder(hostOf(e, child), t.denyH) != "":
		return childSkip, nil
	case e.Target == child:
		return childMount, e
	case e == parent:
		return childHost, e
	}
	return childSkip, nil
}

// splitPattern validates a List pattern and splits it into segments.
func splitPattern(pattern string) ([]string, error) {
	if pattern == "" {
		pattern = "*"
	}
	if strings.HasPrefix(pattern, "/") || strings.IndexByte(pattern, 0) >= 0 {
		return nil, fmt.Errorf("%w: pattern %q must be relative to the listed directory", path.ErrBadPattern, pattern)
	}
	var segs []string
	for _, s := range strings.Split(pattern, "/") {
		if s == "" || s == "." {
			continue
		}
		if s == ".." {
			return nil, fmt.Errorf("%w: pattern %q must not contain a .. segment", path.ErrBadPattern, pattern)
		}
		if _, err := path.Match(s, ""); err != nil {
			return nil, fmt.Errorf("%w: %q", err, pattern)
		}
		if len(segs) > 0 && s == "**" && segs[len(segs)-1] == "**" {
			continue
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		segs = []string{"*"}
	}
	stars := 0
	for _, s := range segs {
		if s == "**" {
			stars++
		}
	}
	if stars > MaxGlobstars {
		return nil, fmt.Errorf("%w: pattern %q has %d ** segments; at most %d are allowed", path.ErrBadPattern, pattern, stars, MaxGlobstars)
	}
	return segs, nil
}

// matchSegs reports whether the path segments name match the pattern
// segments pat, where "**" matches zero or more segments.
func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// couldMatchBelow reports whether some path strictly beneath the directory
// dir (as segments) could match pat.
func couldMatchBelow(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := path.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat, dir = pat[1:], dir[1:]
	}
	return len(pat) > 0
}

// readCut reads at most maxChars runes from r and reports whether there was
// more. Invalid UTF-8 bytes count as one character each.
func readCut(r io.Reader, maxChars int) (string, bool, error) {
	limit := int64(maxChars)*utf8.UTFMax + utf8.UTFMax
	buf, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return "", false, err
	}
	n, i := 0, 0
	for i < len(buf) {
		if n == maxChars {
			return string(buf[:i]), true, nil
		}
		_, size := utf8.DecodeRune(buf[i:])
		i += size
		n++
	}
	return string(buf), false, nil
}

// binaryText says why text is not text ("an ELF executable or library",
// "it holds NUL bytes"), or "" for text. As git does, a NUL byte is the
// mark of a binary file; text in another encoding than UTF-8 is still text.
func binaryText(text string) string {
	switch {
	case strings.HasPrefix(text, "\x7fELF"):
		return "an ELF executable or library"
	case strings.IndexByte(text, 0) >= 0:
		return "it holds NUL bytes"
	}
	return ""
}

// toolError turns an error of the platform file code into a *PathError.
func (t *Table) toolError(op, path string, err error) error {
	switch e := err.(type) {
	case *PathError:
		if e.Path == "" {
			e.Path = path
		}
		e.Op = op
		return e
	case *changedError:
		logrus.WithFields(logrus.Fields{"op": op, "path": path, "cause": e.cause}).Debug("path changed between check and use")
		return &PathError{Op: op, Path: path, Err: ErrChanged, cause: e.cause}
	case *errLimit:
		return &PathError{Op: op, Path: path, Err: ErrTooMany, Rule: e.what}
	}
	return &PathError{Op: op, Path: path, Err: err}
}

// changedError is the platform code's report that the file system did not
// match the resolution: a symbolic link or another directory was swapped in.
type changedError struct{ cause error }

func (e *changedError) Error() string { return "path changed: " + e.cause.Error() }

// notFile is the platform code's report that the path is not a regular file.
// fileMount reports whether e is a file mounted on its own (an attachment),
// whose target Read opens as a file.
func fileMount(e *Entry) bool {
	if e.Origin != OriginMount {
		return false
	}
	fi, err := os.Lstat(e.Source)
	return err == nil && !fi.IsDir()
}

func notFile(why string) error { return &PathError{Err: ErrNotFile, Rule: why} }
