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
// sandbox could have made them. The same holds for a mount target inside a
// writable zone, whose mount point is made on the host (checkTargets).
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
	return t.checkTargets(writable)
}

// checkTargets refuses a mount target inside a writable zone whose host
// path goes through a symlink inside a directory a sandbox can write. The
// mount point is made on the host by path when the sandbox is set up (a
// folder, or an empty file for a file mount), so a link an earlier command
// planted (a -> .git/hooks, with a target of WS/a/pre-commit) would make it
// inside a protect path and put the mount somewhere the policy never saw.
func (t *Table) checkTargets(writable []string) error {
	for i, m := range t.sb.Mounts {
		if m.Target == "" || m.Target == m.Source {
			continue // the target is the source's own path, checked above
		}
		var self *Entry
		for k := range t.entries {
			if t.entries[k].Target == m.Target && t.entries[k].Origin == OriginMount {
				self = &t.entries[k]
			}
		}
		parent := t.lookupExcept(m.Target, self)
		if parent == nil || parent.Readonly || parent.Origin == OriginSystem {
			continue
		}
		if err := checkSource(hostOf(parent, m.Target), writable); err != nil {
			return fmt.Errorf("mounts[%d].target %s: %w", i, m.Target, err)
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
