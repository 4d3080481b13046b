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
