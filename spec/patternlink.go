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
// what the rest of the pattern names below its target. A dangling link
// holds the first missing name on its way, so nothing can be made there
// that the link would then reach.

// maxPatternLinks bounds the entries the links below the patterns add
// (links reached through links included).
const maxPatternLinks = 256

// withPatternLinks returns sb with the entries that hold its deny and
// protect patterns on what their matches' symlinks reach in the sandbox
// (see above), or sb itself when there is none. systemDirs are the host
// directories the sandbox shows at their own place.
func withPatternLinks(sb *Sandbox, systemDirs []string) (*Sandbox, error) {
	if !slices.ContainsFunc(sb.Deny, IsPattern) && !slices.ContainsFunc(sb.Protect, IsPattern) {
		return sb, nil
	}
	v := sandboxView{zones: sandboxZones(sb), system: systemDirs}
	deny, derr := v.linkEntries(sb.Deny, true)
	protect, perr := v.linkEntries(sb.Protect, false)
	if err := errors.Join(derr, perr); err != nil {
		return nil, err
	}
	if len(deny) == 0 && len(protect) == 0 {
		return sb, nil
	}
	c := sb.Clone()
	c.Deny = appendNew(c.Deny, deny)
	c.Protect = appendNew(c.Protect, protect)
	return c, nil
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
}

// linkEntries returns the entries that hold entries' patterns on what
// their matches' symlinks reach: for deny, wherever the target lies in the
// workspace or a mount; for protect, only where it is writable.
func (v sandboxView) linkEntries(entries []string, deny bool) ([]string, error) {
	var errs []error
	var add []string
	seen := map[string]bool{}
	queue := slices.Clone(entries)
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if !IsPattern(e) || seen[e] {
			continue
		}
		seen[e] = true
		links, err := patternLinks(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range links {
			end, z, inZone, exists, ok := v.follow(l.link)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("cannot hold %s on %s: the link does not resolve (a loop, or more than 40 links): "+
					"remove the link or replace it by what it points to: %w", e, l.link, ErrUnenforceable))
				continue
			case !inZone && deny && exists && l.tails[0] == "" && v.shown(end):
				// A file of a host system directory the link names: the
				// sandbox reads it through the match, so it is masked
				// as a literal deny entry is.
			case !inZone, !deny && z.readonly:
				// Nothing the command can write there, nor read as a
				// file it matches rather than at its own place.
				continue
			}
			for _, t := range l.tails {
				n := end
				if t != "" && exists {
					n = end + "/" + t
				}
				if slices.Contains(add, n) || slices.Contains(entries, n) {
					continue
				}
				if len(add) >= maxPatternLinks {
					return nil, fmt.Errorf("%s: more than %d symlinks below its matches; narrow the pattern or list the targets literally: %w",
						e, maxPatternLinks, ErrUnenforceable)
				}
				add = append(add, n)
				queue = append(queue, n) // links below the target count too
			}
		}
	}
	return add, errors.Join(errs...)
}

// patternLink is a symlink met by a pattern's walk: a match itself (tail
// ""), or a directory on the way to one, with what the pattern names
// below it.
type patternLink struct {
	link  string
	tails []string
}

// patternLinks walks pattern's literal prefix as PatternMatches does and
// returns the symlinks that match it or may lead to a match.
func patternLinks(pattern string) ([]patternLink, error) {
	root := literalPrefix(pattern)
	pc := comps(pattern)
	var out []patternLink
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		xc := comps(p)
		if d.Type()&fs.ModeSymlink != 0 {
			if ts := tails(pc, xc); len(ts) > 0 {
				out = append(out, patternLink{link: p, tails: ts})
			}
			if len(out) > maxPatternLinks {
				return fmt.Errorf("pattern %q meets more than %d symlinks; narrow it: %w", pattern, maxPatternLinks, ErrUnenforceable)
			}
			return nil
		}
		if d.IsDir() && (matchExact(pc, xc) || !mayBelow(pc, xc)) {
			return fs.SkipDir // below a match is covered by the match
		}
		return nil
	})
	return out, err
}

// tails returns, once each, what is left of the pattern components pc
// once they have matched all of xc, joined with "/": "" when xc matches
// the whole pattern.
func tails(pc, xc []string) []string {
	var out []string
	var rec func(pc, xc []string)
	rec = func(pc, xc []string) {
		if len(xc) == 0 {
			t := strings.Join(pc, "/")
			if !slices.ContainsFunc(pc, func(c string) bool { return c != "**" }) {
				t = "" // "**" matches no component too: xc matches
			}
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
			return
		}
		if len(pc) == 0 {
			return
		}
		if pc[0] == "**" {
			rec(pc, xc[1:])
			rec(pc[1:], xc)
			return
		}
		if ok, _ := path.Match(pc[0], xc[0]); ok {
			rec(pc[1:], xc[1:])
		}
	}
	rec(pc, xc)
	if slices.Contains(out, "") {
		return []string{""} // the link itself matches: its whole target is held
	}
	return out
}

// follow resolves sandbox path p, a symlink, as the kernel does in the
// sandbox: one component at a time, each link's target walked in place,
// ".." applied to the directory reached so far, never cleaned first. It
// returns where p leads (the first missing name on the way when it does
// not exist: nothing may be made there), the zone that holds it, whether
// the sandbox shows it (exists) and ok false for a loop or an error.
func (v sandboxView) follow(p string) (end string, z zone, inZone, exists, ok bool) {
	pending := strings.Split(p, "/")
	cur := "/"
	n := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := v.lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			z, inZone = containingZone(v.zones, next)
			return next, z, inZone, false, true
		case err != nil:
			return "", zone{}, false, false, false
		case fi.Mode()&fs.ModeSymlink == 0:
			if !fi.IsDir() && len(pending) > 0 {
				// ENOTDIR: nothing below a file can be made either.
				z, inZone = containingZone(v.zones, next)
				return next, z, inZone, true, true
			}
			cur = next
			continue
		}
		if n++; n > 40 {
			return "", zone{}, false, false, false
		}
		target, err := v.readlink(next)
		if err != nil || target == "" {
			return "", zone{}, false, false, false
		}
		pending = append(strings.Split(target, "/"), pending...)
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
	}
	z, inZone = containingZone(v.zones, cur)
	return cur, z, inZone, true, true
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
