package spec

import (
	"path/filepath"
	"strings"
)

// A denied path is hidden by a mount over what was there when the sandbox
// was built. The host can put a new file under a denied name mid-run
// (create it, or rename one over it, which detaches the mount over the old
// file); the runner's deny watcher watches the host directories that can
// receive one and covers it inside the sandbox as it appears. These are
// the facts about the sandbox it needs.

// LiteralPrefix returns the directory of the deny or protect pattern p
// before its first pattern component ("/ws/**/.env" gives "/ws"), or p
// itself when p is a plain path.
func LiteralPrefix(p string) string { return literalPrefix(p) }

// HostPath returns the host path that the sandbox shows at the absolute,
// clean sandbox path p, and whether the host shows anything there: below
// the innermost zone (the workspace or a mount) that holds p, the zone's
// source; under `system: rootfs`, the rootfs; under `system: host`, a
// system directory at its own path. Elsewhere (the sandbox's private /tmp,
// /dev, /proc) nothing of the host is shown and ok is false.
func HostPath(sb *Sandbox, p string) (host string, ok bool) {
	if z, found := containingZone(sandboxZones(sb), p); found {
		return filepath.Join(z.source, strings.TrimPrefix(strings.TrimPrefix(p, z.target), "/")), true
	}
	switch sb.System.Kind {
	case SystemRootfs:
		return filepath.Join(sb.System.Rootfs, p), true
	case SystemHost:
		for _, d := range HostSystemDirs {
			if within(p, d) {
				return p, true
			}
		}
	}
	return "", false
}

// WithResolvedSources returns a copy of sb whose mounts' sources have their
// symbolic links resolved on the host, as the kernel resolved them when it
// mounted them (a mount's target stays where it was: a mount without one
// gets its source as written). HostPath of the copy names the directory
// the sandbox shows, which a walk that does not follow links can read: a
// source that is a link to a directory is the directory.
func WithResolvedSources(sb *Sandbox) *Sandbox {
	c := sb.Clone()
	for i, m := range c.Mounts {
		if m.Target == "" {
			c.Mounts[i].Target = m.Source
		}
		f := hostForms(m.Source)
		c.Mounts[i].Source = f[len(f)-1]
	}
	return c
}
