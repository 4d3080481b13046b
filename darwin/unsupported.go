package darwin

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// Unsupported reports what of sb Seatbelt cannot enforce. refused are
// features that stop the run: remapped mounts and a rootfs always, limits
// and a network allow list when sb.RequireOSSandbox is true, and deny or
// protect names with non-ASCII characters. degraded are the limits and the
// allow list when sb.RequireOSSandbox is false: the run goes ahead without
// them (an allow list becomes no network) and reports them. Each entry is a
// sentence that names the feature and says it works on Linux.
func Unsupported(sb *spec.Sandbox) (refused []string, degraded []string) {
	if sb == nil {
		return nil, nil
	}
	for _, m := range sb.Mounts {
		if m.Target != "" && filepath.Clean(m.Target) != filepath.Clean(m.Source) {
			refused = append(refused, fmt.Sprintf("mount %s at %s: Seatbelt cannot remap paths, so a mount's target must equal its source; remapped mounts work on Linux", m.Source, m.Target))
		}
	}
	if sb.System.Kind == spec.SystemRootfs {
		refused = append(refused, fmt.Sprintf("system: %s: Seatbelt cannot give a process another root filesystem; use system: host or none; a rootfs works on Linux", sb.System.Rootfs))
	}
	var limits []string
	if sb.Limits.Memory > 0 {
		limits = append(limits, "memory limit ("+spec.FormatBytes(sb.Limits.Memory)+")")
	}
	if sb.Limits.Pids > 0 {
		limits = append(limits, fmt.Sprintf("pids limit (%d)", sb.Limits.Pids))
	}
	if sb.Limits.CPUs > 0 {
		limits = append(limits, fmt.Sprintf("cpus limit (%g)", sb.Limits.CPUs))
	}
	for _, l := range limits {
		if sb.RequireOSSandbox {
			refused = append(refused, l+": macOS has no per-sandbox resource limits; this works on Linux (cgroups); set require_os_sandbox: false to run without it")
		} else {
			degraded = append(degraded, l+": not enforced on macOS; this works on Linux (cgroups)")
		}
	}
	if sb.Network.Enabled && len(sb.Network.Allow) > 0 {
		list := strings.Join(sb.Network.Allow, ", ")
		if sb.RequireOSSandbox {
			refused = append(refused, "network allow list ("+list+"): Seatbelt cannot filter connections by host name, and the filtering proxy that would enforce it does not exist yet; use network: true or false, or set require_os_sandbox: false to run with the network off")
		} else {
			degraded = append(degraded, "network allow list ("+list+"): not enforceable on macOS, so the network is off instead")
		}
	}
	for _, p := range append(append([]string(nil), sb.Deny...), sb.Protect...) {
		if rel := belowArea(sb, p); !isASCII(rel) {
			refused = append(refused, fmt.Sprintf("deny or protect path %s: macOS treats differently composed Unicode names as the same file but Seatbelt compares bytes, so a rule on a non-ASCII name could be sidestepped; rename it (deny and protect by name work on Linux)", p))
		}
	}
	return refused, degraded
}

// belowArea returns the part of p below the deepest workspace or mount that
// holds it, or p itself when none does.
func belowArea(sb *spec.Sandbox, p string) string {
	best := ""
	consider := func(a string) {
		if a != "" && isUnder(p, a) && len(a) > len(best) {
			best = a
		}
	}
	consider(sb.Root)
	for _, m := range sb.Mounts {
		consider(m.Source)
	}
	if best == "" {
		return p
	}
	return strings.TrimPrefix(p, best)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
