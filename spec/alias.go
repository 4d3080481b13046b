package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Deny and protect are about host files. A host file can be reachable at
// more than one sandbox path: the workspace mounted again at /alias, or ~
// mounted at /hosthome while ~/.ssh is denied. The kernel enforces a mask or
// a read-only rebind at one sandbox path only, so every sandbox path that
// reaches a deny or protect path must get its own (issue 9, item 4). The
// mount table (mounts.Resolve, CanRead, CanWrite) matches host paths, so it
// agrees with the kernel once the spec covers every alias.

// aliasZone is one place the sandbox shows a host directory: the workspace,
// a mount, or the rootfs.
type aliasZone struct {
	source, target string
	// field names the zone in a config ("sandbox.mounts[1]"); mount is
	// true for an extra mount.
	field string
	mount bool
	// forms are hostForms(source), worked out once per WithAliases: every
	// deny and protect entry is compared with every zone.
	forms []string
}

// WithAliases returns a copy of sb whose Deny and Protect lists also hold
// every other sandbox path that reaches the same host file: for a deny or
// protect path P and a zone whose source holds P, the zone's target joined
// with P's place in the source; for a zone whose source lies inside P, the
// zone's target itself (the whole zone is denied or protected). Sources and
// P are compared as written and with symbolic links resolved on the host.
// sb is not changed; a sandbox with no alias is returned as a copy too.
func WithAliases(sb *Sandbox) *Sandbox {
	c := sb.Clone()
	zones := aliasZones(sb)
	c.Deny = appendAliases(c.Deny, sb.Deny, zones)
	c.Protect = appendAliases(c.Protect, sb.Protect, zones)
	// A read-write mount of a git directory keeps its hooks and config
	// protected, and what the protected git configs include is protected
	// too (see gitinclude.go).
	if g := gitDirMounts(sb); len(g) > 0 {
		c.Protect = appendAliases(append(c.Protect, g...), g, zones)
		sb = sb.Clone()
		sb.Protect = append(sb.Protect, g...)
	}
	if inc := gitIncludes(sb); len(inc) > 0 {
		c.Protect = appendAliases(append(c.Protect, inc...), inc, zones)
	}
	// What those configs and the host's global ones name as code: a
	// core.hooksPath, a program (see gitcode.go).
	if code := gitCodePaths(sb); len(code) > 0 {
		c.Protect = appendAliases(append(c.Protect, code...), code, zones)
	}
	// The host's secrets are host paths, never sandbox paths: only the
	// zones that show them add an alias (system: host masks the
	// secrets at their own path already).
	for _, s := range HostSecrets() {
		c.Deny = appendZoneAliases(c.Deny, hostForms(s), zones)
	}
	return c
}

// aliasZones returns the zones of sb: the workspace, the extra mounts and
// the rootfs.
func aliasZones(sb *Sandbox) []aliasZone {
	var zones []aliasZone
	if sb.Root != "" {
		zones = append(zones, aliasZone{source: sb.Root, target: sb.Root, field: "sandbox.root"})
	}
	for i, m := range sb.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		zones = append(zones, aliasZone{source: m.Source, target: t, field: index("sandbox.mounts", i), mount: true})
	}
	if sb.System.Kind == SystemRootfs {
		zones = append(zones, aliasZone{source: sb.System.Rootfs, target: "/", field: "sandbox.system"})
	}
	for i := range zones {
		zones[i].forms = hostForms(zones[i].source)
	}
	return zones
}

// GitProtect returns the protect entries WithAliases adds for git, as
// host paths without their aliases: the hooks and config of a read-write
// mount of a git directory, what protected git configs include, and what
// they and the host's global configs name as code (a core.hooksPath, a
// program). The mount table matches host paths itself, so it takes these
// rather than every alias WithAliases works out.
func GitProtect(sb *Sandbox) []string {
	g := gitDirMounts(sb)
	out := slices.Clone(g)
	if len(g) > 0 {
		sb = sb.Clone()
		sb.Protect = append(sb.Protect, g...)
	}
	out = append(out, gitIncludes(sb)...)
	return append(out, gitCodePaths(sb)...)
}

func appendAliases(out, paths []string, zones []aliasZone) []string {
	for _, p := range paths {
		if IsPattern(p) {
			as, _ := patternAliases(p, zones) // AliasProblems refuses what is left out
			for _, a := range as {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
			continue
		}
		forms := hostForms(p)
		// P is a sandbox path: where a zone maps it elsewhere, the host
		// file is the zone's.
		if z, ok := innermostZone(zones, p); ok && z.source != z.target {
			forms = append(forms, hostForms(filepath.Join(z.source, strings.TrimPrefix(strings.TrimPrefix(p, z.target), "/")))...)
		}
		out = appendZoneAliases(out, forms, zones)
	}
	return out
}

// appendZoneAliases adds, for each host path in forms, the sandbox path of
// every zone whose source holds it, or the zone's target when the source
// lies inside it.
func appendZoneAliases(out, forms []string, zones []aliasZone) []string {
	for _, host := range forms {
		for _, z := range zones {
			for _, src := range z.forms {
				var alias string
				switch {
				case within(host, src):
					// host is a literal path: pattern characters below the
					// source (a link's target's) are escaped, so the alias
					// matches only the file.
					alias = filepath.Join(z.target, EscapePattern(strings.TrimPrefix(strings.TrimPrefix(host, src), "/")))
				case within(src, host):
					alias = z.target
				default:
					continue
				}
				if !slices.Contains(out, alias) {
					out = append(out, alias)
				}
			}
		}
	}
	return out
}

// innermostZone is the zone with the longest target holding sandbox path p.
func innermostZone(zones []aliasZone, p string) (aliasZone, bool) {
	var best aliasZone
	found := false
	for _, z := range zones {
		if within(p, z.target) && (!found || len(z.target) > len(best.target)) {
			best, found = z, true
		}
	}
	return best, found
}

// hostForms is p as written and, when it differs, with symbolic links
// resolved on the host (of its longest existing ancestor). One walk from
// the root, a lstat a name (a link's target resolved where one is met):
// every protect entry that does not exist yet is asked, at every build.
func hostForms(p string) []string {
	out := []string{p}
	if !filepath.IsAbs(p) {
		return out
	}
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur, i := "/", 0
	for ; i < len(comps); i++ {
		next := filepath.Join(cur, comps[i])
		fi, err := os.Lstat(next)
		if err != nil {
			break
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			r, err := filepath.EvalSymlinks(next)
			if err != nil {
				break // dangling: cur is the longest existing ancestor
			}
			next = r
		}
		cur = next
	}
	if full := filepath.Join(cur, strings.Join(comps[i:], "/")); full != p {
		out = append(out, full)
	}
	return out
}
