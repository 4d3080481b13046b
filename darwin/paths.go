package darwin

import (
	"os"
	"path/filepath"
	"strings"
)

// firmlinks are the symbolic links at the top of every macOS system that
// Seatbelt always sees resolved: /tmp is /private/tmp to it.
var firmlinks = [][2]string{
	{"/tmp", "/private/tmp"},
	{"/var", "/private/var"},
	{"/etc", "/private/etc"},
}

// privateForm spells p the way Seatbelt reports it: /tmp/x becomes
// /private/tmp/x. Other paths are returned unchanged.
func privateForm(p string) string {
	for _, l := range firmlinks {
		if rest, ok := cut(p, l[0]); ok {
			return l[1] + rest
		}
	}
	return p
}

// firmlinkAlias returns the other spelling of p through the fixed links
// (/private/tmp/x for /tmp/x and back), or "" when there is none. These
// links belong to root and cannot be changed by a sandboxed process, so an
// allow rule may name both spellings.
func firmlinkAlias(p string) string {
	for _, l := range firmlinks {
		if rest, ok := cut(p, l[0]); ok {
			return l[1] + rest
		}
		if rest, ok := cut(p, l[1]); ok {
			return l[0] + rest
		}
	}
	return ""
}

// cut reports whether p is dir or below it, and returns the rest ("" or
// "/...").
func cut(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir):], true
	}
	return "", false
}

// isUnder reports whether p is dir or below it.
func isUnder(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	_, ok := cut(p, dir)
	return ok
}

// ancestors returns the proper ancestors of the absolute path p, nearest
// first, "/" included.
func ancestors(p string) []string {
	var out []string
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if d == "." {
			return out // a relative path, already refused by the caller
		}
		out = append(out, d)
		if d == "/" {
			return out
		}
	}
}

// depth is the number of components of the absolute path p.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// Canonicalize returns the absolute path p as Seatbelt sees it on this host:
// the longest existing prefix with its symbolic links resolved (on macOS
// also with the case and Unicode form the filesystem stores), the rest
// appended, and /tmp, /var and /etc spelled /private/tmp, /private/var and
// /private/etc. It is the default ProfileOptions.Canon.
func Canonicalize(p string) string {
	return privateForm(resolveExisting(filepath.Clean(p), realPath))
}

// resolveExisting resolves the longest prefix of p that resolve accepts and
// appends the rest of p unchanged: a file that does not exist yet is
// spelled under its resolved parent, as Seatbelt spells a file being
// created.
func resolveExisting(p string, resolve func(string) (string, error)) string {
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := resolve(cur); err == nil && filepath.IsAbs(r) {
			return filepath.Join(r, rest)
		}
		if cur == "/" || cur == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// evalSymlinks is realPath's portable fallback.
func evalSymlinks(p string) (string, error) {
	if _, err := os.Lstat(p); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}
