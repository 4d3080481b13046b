package spec

import (
	"fmt"
	"strings"
)

// Access is how a path is exposed in a sandbox.
type Access string

const (
	// AccessRW is readable and writable.
	AccessRW Access = "rw"
	// AccessRO is readable only.
	AccessRO Access = "ro"
	// AccessDeny is neither readable nor writable (invisible).
	AccessDeny Access = "deny"
	// AccessProtect is readable but never writable.
	AccessProtect Access = "protect"
)

// PathSummary is one row of the effective sandbox.
type PathSummary struct {
	Path   string `json:"path"`
	Host   string `json:"host,omitempty"`
	Access Access `json:"access"`
	// Origin is workspace, mount, system, deny or protect.
	Origin string `json:"origin"`
	Zone   string `json:"zone,omitempty"`
}

// Summary is a compact, serializable view of an effective sandbox, used by
// `cordon explain` and in run reports.
type Summary struct {
	Paths   []PathSummary `json:"paths"`
	Network string        `json:"network"`
	Limits  Limits        `json:"limits"`
	Lineage []string      `json:"lineage,omitempty"`
	// StrictDeny is the sandbox's strict_deny.
	StrictDeny bool `json:"strict_deny,omitempty"`
}

// Summarize describes sb.
func Summarize(sb *Sandbox) Summary {
	var s Summary
	ro := func(b bool) Access {
		if b {
			return AccessRO
		}
		return AccessRW
	}
	if sb.Root != "" {
		s.Paths = append(s.Paths, PathSummary{Path: sb.Root, Host: sb.Root, Access: ro(sb.Readonly), Origin: "workspace", Zone: WorkspaceZone})
	}
	for _, m := range sb.Mounts {
		s.Paths = append(s.Paths, PathSummary{Path: m.Target, Host: m.Source, Access: ro(m.Readonly), Origin: "mount", Zone: m.Name})
	}
	for _, d := range SystemDirs(sb) {
		s.Paths = append(s.Paths, PathSummary{Path: d, Host: d, Access: AccessRO, Origin: "system"})
	}
	if sb.System.Kind == SystemRootfs {
		s.Paths = append(s.Paths, PathSummary{Path: "/", Host: sb.System.Rootfs, Access: AccessRO, Origin: "system"})
	}
	for _, p := range sb.Deny {
		s.Paths = append(s.Paths, PathSummary{Path: p, Access: AccessDeny, Origin: "deny"})
	}
	for _, p := range SystemSecrets(sb) {
		s.Paths = append(s.Paths, PathSummary{Path: p, Access: AccessDeny, Origin: "system-secret"})
	}
	for _, p := range sb.Protect {
		s.Paths = append(s.Paths, PathSummary{Path: p, Access: AccessProtect, Origin: "protect"})
	}
	s.Network = sb.Network.String()
	s.Limits = sb.Limits
	s.Lineage = append([]string(nil), sb.Lineage...)
	s.StrictDeny = sb.StrictDeny
	return s
}

// WorkspaceZone is the zone name of the workspace root.
const WorkspaceZone = "workspace"

// String renders the network policy as "off", "on" or "allow: a, b".
func (n Network) String() string {
	switch {
	case !n.Enabled:
		return "off"
	case len(n.Allow) > 0:
		return "allow: " + strings.Join(n.Allow, ", ")
	default:
		return "on"
	}
}

// Table renders the summary as the short table `cordon explain` prints.
func (s Summary) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %-40s %s\n", "ACCESS", "PATH", "FROM")
	for _, p := range s.Paths {
		from := p.Origin
		if p.Zone != "" {
			from += " (zone " + p.Zone + ")"
		}
		if p.Host != "" && p.Host != p.Path {
			from += " <- " + p.Host
		}
		fmt.Fprintf(&b, "%-8s %-40s %s\n", p.Access, p.Path, from)
	}
	fmt.Fprintf(&b, "network: %s\n", s.Network)
	fmt.Fprintf(&b, "limits:  %s\n", s.Limits)
	if s.StrictDeny {
		fmt.Fprintf(&b, "deny:    strict (strict_deny: every open, reads included, is decided by cordon; a file the host creates or renames under a denied name mid-run stays unreadable)\n")
	} else {
		fmt.Fprintf(&b, "deny:    default (reads stay in the kernel: a file the host creates or renames under a denied name mid-run is covered as it appears, on Linux milliseconds later; strict_deny: true decides every open)\n")
	}
	if len(s.Lineage) > 0 {
		fmt.Fprintf(&b, "lineage: %s\n", strings.Join(s.Lineage, " > "))
	} else {
		fmt.Fprintf(&b, "lineage: (top level)\n")
	}
	return b.String()
}

// String renders the limits that are set, as "timeout=30s memory=512MiB".
func (l Limits) String() string {
	var parts []string
	if l.Timeout > 0 {
		parts = append(parts, "timeout="+l.Timeout.String())
	}
	if l.Memory > 0 {
		parts = append(parts, "memory="+FormatBytes(l.Memory))
	}
	if l.Pids > 0 {
		parts = append(parts, fmt.Sprintf("pids=%d", l.Pids))
	}
	if l.FileSize > 0 {
		parts = append(parts, "file_size="+FormatBytes(l.FileSize))
	}
	if l.CPUs > 0 {
		parts = append(parts, fmt.Sprintf("cpus=%g", l.CPUs))
	}
	if l.Output > 0 {
		parts = append(parts, "output="+FormatBytes(l.Output))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// FormatBytes renders n with the largest binary unit that divides it.
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for i < len(units)-1 && n != 0 && n%1024 == 0 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", n, units[i])
}
