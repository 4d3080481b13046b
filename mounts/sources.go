package mounts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// CheckSources verifies, at the moment of use, that no mount source of the
// sandbox is reached through a symlink lying inside a directory that the
// sandbox, or a sandbox up its worker chain (spec.Sandbox.Guarded), can
// write. Sources are bound and opened by path, so without this check a
// command could rename a source (or one of its parents) and put a symlink
// to any host path in its place, and the next run or file-tool call would
// follow it. Symlinks elsewhere (a host's /home -> /data/home) are fine: no
// sandbox could have made them.
func (t *Table) CheckSources() error {
	writable := append([]string(nil), t.sb.Guarded...)
	writable = append(writable, spec.WritableSources(t.sb)...)
	var sources []string
	if t.sb.Root != "" {
		sources = append(sources, t.sb.Root)
	}
	for _, m := range t.sb.Mounts {
		sources = append(sources, m.Source)
	}
	for _, src := range sources {
		if err := checkSource(src, writable); err != nil {
			return err
		}
	}
	return nil
}

func checkSource(src string, writable []string) error {
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(filepath.Clean(src), "/"), "/") {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil // a missing source fails later, with its own error
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		for _, w := range writable {
			if strings.HasPrefix(cur, strings.TrimSuffix(w, "/")+"/") {
				return fmt.Errorf("%w: %s goes through the symlink %s inside %s; "+
					"replace the symlink by a directory, or mount the real path", ErrUnsafeSource, src, cur, w)
			}
		}
	}
	return nil
}
