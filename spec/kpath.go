package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// hostWalk resolves the absolute host path p as the kernel does: one
// component at a time, every symbolic link read and its target walked in
// place, ".." applied to the directory reached so far (which holds no
// link), never cleaned first. It returns where p leads and the links
// followed on the way. A path that does not exist ends at its first
// missing name: protecting that name means nothing can ever be made there,
// neither the rest of p nor a link that would send it elsewhere, so the
// answer holds whatever p's rest is ("missing/../x" included). A walk that
// follows more than 40 links, or meets an error other than a missing name,
// returns ok false.
func hostWalk(p string) (end string, links []string, ok bool) {
	if !filepath.IsAbs(p) {
		return "", nil, false
	}
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
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return next, links, true
		case err != nil:
			return "", nil, false
		case fi.Mode()&fs.ModeSymlink == 0:
			if !fi.IsDir() && len(pending) > 0 {
				// The kernel stops at a file with more to come
				// (ENOTDIR): nothing below it can be made either.
				return next, links, true
			}
			cur = next
			continue
		}
		if n++; n > 40 {
			return "", nil, false
		}
		target, err := os.Readlink(next)
		if err != nil || target == "" {
			return "", nil, false
		}
		links = append(links, next)
		pending = append(strings.Split(target, "/"), pending...)
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
	}
	return cur, links, true
}
