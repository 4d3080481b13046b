package attach

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cordon-run/cordon/mounts"
	"github.com/cordon-run/cordon/spec"
)

// DefaultMaxCount is the most attachments a Policy with MaxCount 0 allows.
const DefaultMaxCount = 16

// DefaultMaxBytes is the total size a Policy with MaxBytes 0 allows.
const DefaultMaxBytes int64 = 10 << 20

// Policy caps what a parent may attach to one child.
type Policy struct {
	// MaxCount is the most attachments (DefaultMaxCount when 0).
	MaxCount int
	// MaxBytes is the largest total size in bytes (DefaultMaxBytes when 0).
	MaxBytes int64
	// Suffixes, when not empty, are the file suffixes allowed (".md").
	Suffixes []string
}

// DefaultPolicy returns the policy `cordon run --attach` and `cordon mcp
// --attach` apply: at most 16 files, 10 MiB in total, any suffix.
func DefaultPolicy() Policy {
	return Policy{MaxCount: DefaultMaxCount, MaxBytes: DefaultMaxBytes}
}

func (p Policy) maxCount() int {
	if p.MaxCount <= 0 {
		return DefaultMaxCount
	}
	return p.MaxCount
}

func (p Policy) maxBytes() int64 {
	if p.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return p.MaxBytes
}

// Resolve checks each path against the parent's mount table and the policy,
// and returns one read-only mount per distinct file: Source is the resolved
// host file, Target its symlink-free sandbox path in the parent. A relative
// path is relative to the parent's workspace. Every problem is reported at
// once: the error joins one *Error per refusal.
func Resolve(parent *mounts.Table, paths []string, p Policy) ([]spec.Mount, error) {
	if parent == nil {
		return nil, errors.New("attach: no parent mount table")
	}
	var (
		errs  []error
		out   []spec.Mount
		seen  = map[string]bool{}
		total int64
	)
	if n := len(paths); n > p.maxCount() {
		errs = append(errs, &Error{Rule: RuleCount, Err: ErrCount,
			Detail: fmt.Sprintf("%d attachments given, but at most %d are allowed; attach fewer files "+
				"(or pass a directory the child may read through its own sandbox)", n, p.maxCount())})
	}
	for _, path := range paths {
		m, size, err := resolveOne(parent, path, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[m.Target] {
			continue
		}
		seen[m.Target] = true
		total += size
		out = append(out, m)
	}
	if total > p.maxBytes() {
		errs = append(errs, &Error{Rule: RuleTotalSize, Err: ErrSize,
			Detail: fmt.Sprintf("the attachments hold %d bytes in total, over the limit of %d bytes; attach fewer or smaller files",
				total, p.maxBytes())})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// resolveOne checks one path and returns its mount and size.
func resolveOne(parent *mounts.Table, path string, p Policy) (spec.Mount, int64, error) {
	roots := parent.ReadableRoots()
	host, err := parent.Resolve(path)
	if err != nil {
		return spec.Mount{}, 0, outsideError(path, err, roots)
	}
	target, ok := sandboxPath(parent, path, host)
	if !ok {
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleOutside, Err: ErrOutside, Allowed: roots,
			Detail: fmt.Sprintf("it leads through symbolic links to %s, which the parent sees at no fixed path; "+
				"attach the file itself; the parent can read: %s", host, strings.Join(roots, ", "))}
	}
	fi, err := os.Lstat(host)
	switch {
	case err != nil:
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleNotFile, Err: ErrNotFile,
			Detail: fmt.Sprintf("%s does not exist in the parent sandbox; attach an existing file", target)}
	case !fi.Mode().IsRegular():
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleNotFile, Err: ErrNotFile,
			Detail: fmt.Sprintf("%s is a %s, not a regular file; attach files one by one", target, kind(fi))}
	}
	if err := parent.CheckSuffix(target); err != nil {
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleSuffix, Err: ErrSuffix, cause: err,
			Allowed: pathErrAllowed(err), Detail: err.Error()}
	}
	if err := parent.CheckSize(target); err != nil {
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleFileSize, Err: ErrSize, cause: err, Detail: err.Error()}
	}
	if len(p.Suffixes) > 0 && !hasSuffix(filepath.Base(target), p.Suffixes) {
		return spec.Mount{}, 0, &Error{Path: path, Rule: RuleSuffix, Err: ErrSuffix, Allowed: append([]string(nil), p.Suffixes...),
			Detail: fmt.Sprintf("the attachment policy allows only the suffixes %s", strings.Join(p.Suffixes, ", "))}
	}
	return spec.Mount{Source: host, Target: target, Readonly: true}, fi.Size(), nil
}

// outsideError turns a refusal of the parent's table into an *Error that
// lists the parent's readable roots.
func outsideError(path string, err error, roots []string) error {
	rule := RuleOutside
	why := "it is outside the parent's sandbox"
	if errors.Is(err, mounts.ErrDenied) {
		rule = RuleDeny
		why = "it is on the parent's deny list"
	} else if errors.Is(err, mounts.ErrInvalidPath) || errors.Is(err, mounts.ErrLoop) {
		why = "the parent cannot resolve it (" + err.Error() + ")"
	}
	return &Error{Path: path, Rule: rule, Err: ErrOutside, cause: err, Allowed: roots,
		Detail: fmt.Sprintf("%s; the parent can read: %s", why, strings.Join(roots, ", "))}
}

func pathErrAllowed(err error) []string {
	var pe *mounts.PathError
	if errors.As(err, &pe) {
		return append([]string(nil), pe.Allowed...)
	}
	return nil
}

// sandboxPath returns the symlink-free sandbox path at which the parent sees
// the host file host, which path resolved to: path itself when it holds no
// symbolic link, otherwise the path through the entry that maps to host.
func sandboxPath(t *mounts.Table, path, host string) (string, bool) {
	entries := t.Entries()
	lex := path
	if !filepath.IsAbs(lex) {
		if e := workspace(entries); e != nil {
			lex = filepath.Join(e.Target, lex)
		}
	}
	lex = filepath.Clean(lex)
	if h, ok := lexicalHost(entries, lex); ok && h == host {
		return lex, true
	}
	// Try the entries whose source holds host, innermost target first.
	sort.SliceStable(entries, func(i, j int) bool { return len(entries[i].Target) > len(entries[j].Target) })
	for _, e := range entries {
		rel, ok := under(host, e.Source)
		if !ok {
			continue
		}
		cand := e.Target
		if rel != "" {
			cand = filepath.Join(e.Target, rel)
		}
		if h, ok := lexicalHost(entries, cand); !ok || h != host {
			continue
		}
		if r, err := t.Resolve(cand); err == nil && r == host {
			return cand, true
		}
	}
	return "", false
}

// lexicalHost maps the clean sandbox path p to the host through the
// longest-prefix entry, without following symbolic links.
func lexicalHost(entries []mounts.Entry, p string) (string, bool) {
	var best *mounts.Entry
	for i := range entries {
		if _, ok := under(p, entries[i].Target); ok && (best == nil || len(entries[i].Target) > len(best.Target)) {
			best = &entries[i]
		}
	}
	if best == nil {
		return "", false
	}
	rel, _ := under(p, best.Target)
	if rel == "" {
		return best.Source, true
	}
	return filepath.Join(best.Source, rel), true
}

// under returns p relative to base when p is base or beneath it.
func under(p, base string) (string, bool) {
	switch {
	case p == base:
		return "", true
	case base == "/":
		return strings.TrimPrefix(p, "/"), strings.HasPrefix(p, "/")
	case strings.HasPrefix(p, base+"/"):
		return p[len(base)+1:], true
	}
	return "", false
}

func workspace(entries []mounts.Entry) *mounts.Entry {
	for i := range entries {
		if entries[i].Origin == mounts.OriginWorkspace {
			return &entries[i]
		}
	}
	return nil
}

func hasSuffix(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) && name != s {
			return true
		}
	}
	return false
}

func kind(fi os.FileInfo) string {
	switch m := fi.Mode(); {
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// Apply returns a copy of child with the attachment mounts added, after
// checking through the child's own mount table that the child can read each
// one. An attachment whose target the child's deny list covers, or whose
// target another mount of the child already uses, is refused. Every problem
// is reported at once.
func Apply(child *spec.Sandbox, ms []spec.Mount) (*spec.Sandbox, error) {
	if child == nil {
		return nil, errors.New("attach: no child sandbox")
	}
	out := child.Clone()
	var errs []error
	for _, m := range ms {
		clash := ""
		if m.Target == out.Root {
			clash = "the child's workspace"
		}
		for _, e := range out.Mounts {
			if e.Target == m.Target {
				clash = "the child's mount of " + e.Source
			}
		}
		if clash != "" {
			errs = append(errs, &Error{Path: m.Target, Rule: RuleTarget, Err: ErrChild,
				Detail: fmt.Sprintf("%s is already used by %s; attach another file", m.Target, clash)})
			continue
		}
		m.Readonly = true
		out.Mounts = append(out.Mounts, m)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(ms) == 0 {
		return out, nil
	}
	t, err := mounts.New(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrChild, err)
	}
	for _, m := range ms {
		if err := t.Check(m.Target, false); err != nil {
			errs = append(errs, &Error{Path: m.Target, Rule: RuleChildDeny, Err: ErrChild, cause: err,
				Detail: fmt.Sprintf("the child sandbox hides it (%v); the child's deny list wins over attachments", err)})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
