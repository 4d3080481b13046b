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
	w, ok := kernelWalk("/", strings.Split(p, "/"), os.Lstat, os.Readlink)
	return w.end, w.links, ok
}

// walked is where kernelWalk ended: end is the path reached (exists), or
// the first missing name with rest the components left after it, or a
// file with more to come (the kernel's ENOTDIR; no rest); links are the
// links followed on the way.
type walked struct {
	end    string
	rest   []string
	exists bool
	links  []string
}

// kernelWalk walks the components pending from directory cur as the
// kernel resolves a path: one component at a time, every symbolic link
// read (readlink) and its target walked in place, ".." applied to the
// directory reached so far, never cleaned first. lstat and readlink give
// the view walked (the host's, or a sandbox's). More than 40 links, or an
// error other than a missing name, returns ok false.
func kernelWalk(cur string, pending []string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (walked, bool) {
	var links []string
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
		fi, err := lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return walked{end: next, rest: pending, links: links}, true
		case err != nil:
			return walked{}, false
		case fi.Mode()&fs.ModeSymlink == 0:
			if !fi.IsDir() && len(pending) > 0 {
				// The kernel stops at a file with more to come
				// (ENOTDIR): nothing below it can be made either.
				return walked{end: next, links: links}, true
			}
			cur = next
			continue
		}
		if n++; n > 40 {
			return walked{}, false
		}
		target, err := readlink(next)
		if err != nil || target == "" {
			return walked{}, false
		}
		links = append(links, next)
		pending = append(strings.Split(target, "/"), pending...)
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
	}
	return walked{end: cur, exists: true, links: links}, true
}
