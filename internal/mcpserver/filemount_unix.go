//go:build unix

package mcpserver

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/cordon-run/cordon/mounts"
)

// readFileMount reads a file that is mounted on its own, as attachments
// are: the table's Read treats every mount root as a directory. It reports
// ok only when path names such a mount's target exactly; the table has
// already allowed reading it (the deny list wins over mounts). The source
// is configuration the parent checked, opened without following a symbolic
// link swapped in since.
func readFileMount(t *mounts.Table, root, path string, maxChars int) (text string, ok bool, err error) {
	p := path
	if !filepath.IsAbs(p) {
		if root == "" {
			return "", false, nil
		}
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if err := t.Check(p, false); err != nil {
		return "", false, nil
	}
	// Sources are opened by path: refuse one the sandbox could have
	// redirected through a planted symlink.
	if err := t.CheckSources(); err != nil {
		return "", true, err
	}
	for _, e := range t.Entries() {
		if e.Target != p || e.Origin != mounts.OriginMount {
			continue
		}
		f, err := os.OpenFile(e.Source, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != nil {
			return "", false, nil
		}
		defer f.Close() //nolint:errcheck // read-only descriptor
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return "", false, nil
		}
		if err := t.CheckSuffix(p); err != nil {
			return "", true, err
		}
		if err := t.CheckSize(p); err != nil {
			return "", true, err
		}
		if maxChars <= 0 {
			maxChars = mounts.DefaultMaxChars
		}
		data, err := io.ReadAll(io.LimitReader(f, int64(maxChars)*utf8.UTFMax+1))
		if err != nil {
			return "", true, &mounts.PathError{Op: "read", Path: path, Err: err}
		}
		s := string(data)
		n := 0
		for i := range s {
			if n == maxChars {
				return s[:i] + fmt.Sprintf("\n[cordon: cut after %d characters; the file has %d bytes]", maxChars, fi.Size()), true, nil
			}
			n++
		}
		return strings.Clone(s), true, nil
	}
	return "", false, nil
}
