package runner

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-run/cordon/spec"
)

// The one table of what each backend cannot enforce. Runs, `cordon spec`,
// `explain` and `doctor` all read it, so they can never disagree.

// Backend names a backend: in a Result and in the table of what each
// cannot enforce.
type Backend string

// The backends.
const (
	// BackendLibcontainer is the Linux backend run as root.
	BackendLibcontainer Backend = "libcontainer"
	// BackendRootless is the Linux backend run by any other user.
	BackendRootless Backend = "libcontainer-rootless"
	// BackendSeatbelt is the macOS backend (package darwin).
	BackendSeatbelt Backend = "seatbelt"
)

// describe names the backend in a refusal.
func (b Backend) describe() string {
	switch b {
	case BackendSeatbelt:
		return "macOS Seatbelt"
	case BackendRootless:
		return "a rootless Linux sandbox"
	}
	return "this Linux host"
}

// Gap is one part of a sandbox that a backend does not enforce.
type Gap struct {
	// Key names the part; it goes in the OCI spec's unenforced annotation.
	Key string
	// Detail is the sentence for the reader: what, why, and what works.
	Detail string
}

// gapRule is one row of the table: a part of a sandbox, the backends that
// cannot enforce it, and how it is dropped when degradation is allowed.
type gapRule struct {
	key string
	// summary says what the row is about, for doctor.
	summary  string
	backends []Backend
	// always: the part is refused even when the sandbox allows
	// degradation (dropping it would change what the sandbox means).
	always bool
	// find returns one sentence per occurrence in sb; refuse says whether
	// the sentence is for a refusal or for a warning.
	find func(b Backend, sb *spec.Sandbox, h HostFacts, refuse bool) []string
	// narrow drops the part from the sandbox the backend builds: never
	// wider than asked.
	narrow func(eff *spec.Sandbox)
	// available, when set, reports whether backend b enforces the part on
	// host h after all; the row then does not apply.
	available func(b Backend, h HostFacts) bool
}

// appliesTo reports whether the row is a gap of backend b on host h.
func (rule gapRule) appliesTo(b Backend, h HostFacts) bool {
	return slices.Contains(rule.backends, b) && (rule.available == nil || !rule.available(b, h))
}

var gapTable = []gapRule{
	{
		key:       "network.allow",
		summary:   "network allow lists: enforced on Linux by cordon's own network stack where /dev/net/tun opens (on macOS by cordon's proxy); refused elsewhere, or the network stays off",
		backends:  []Backend{BackendLibcontainer, BackendRootless},
		available: guardAvailable,
		find: func(_ Backend, sb *spec.Sandbox, h HostFacts, _ bool) []string {
			if !sb.Network.Enabled || len(sb.Network.Allow) == 0 {
				return nil
			}
			list := strings.Join(sb.Network.Allow, ", ")
			_, why := h.NetworkGuard()
			return []string{"network allow list (" + list + "): " + why + ", so cordon cannot enforce it and the network stays off"}
		},
		narrow: func(eff *spec.Sandbox) { eff.Network = spec.Network{} },
	},
	{
		key:      "limits",
		summary:  "memory, pids and cpus limits (no cgroup; rootless: unless a cgroup v2 subtree is delegated to the user): refused, or not enforced",
		backends: []Backend{BackendRootless, BackendSeatbelt},
		find:     findLimits,
		narrow:   func(eff *spec.Sandbox) { eff.Limits.Memory, eff.Limits.Pids, eff.Limits.CPUs = 0, 0, 0 },
	},
	{
		key:      "mounts.target",
		summary:  "mounts whose target differs from their source: refused",
		backends: []Backend{BackendSeatbelt},
		always:   true,
		find: func(_ Backend, sb *spec.Sandbox, _ HostFacts, _ bool) []string {
			var out []string
			for _, m := range sb.Mounts {
				if m.Target != "" && filepath.Clean(m.Target) != filepath.Clean(m.Source) {
					out = append(out, fmt.Sprintf("mount %s at %s: Seatbelt cannot remap paths, so a mount's target must equal its source; remapped mounts work on Linux", m.Source, m.Target))
				}
			}
			return out
		},
	},
	{
		key:      "system.rootfs",
		summary:  "system: rootfs: refused",
		backends: []Backend{BackendSeatbelt},
		always:   true,
		find: func(_ Backend, sb *spec.Sandbox, _ HostFacts, _ bool) []string {
			if sb.System.Kind != spec.SystemRootfs {
				return nil
			}
			return []string{fmt.Sprintf("system: %s: Seatbelt cannot give a process another root filesystem; use system: host or none; a rootfs works on Linux", sb.System.Rootfs)}
		},
	},
	{
		key:      "names.unicode",
		summary:  "deny and protect names with non-ASCII characters: refused",
		backends: []Backend{BackendSeatbelt},
		always:   true,
		find: func(_ Backend, sb *spec.Sandbox, _ HostFacts, _ bool) []string {
			var out []string
			for _, p := range append(append([]string(nil), sb.Deny...), sb.Protect...) {
				if rel := belowArea(sb, p); !isASCII(rel) {
					out = append(out, fmt.Sprintf("deny or protect path %s: macOS treats differently composed Unicode names as the same file but Seatbelt compares bytes, so a rule on a non-ASCII name could be sidestepped; rename it (deny and protect by name work on Linux)", p))
				}
			}
			return out
		},
	},
}

func findLimits(b Backend, sb *spec.Sandbox, h HostFacts, refuse bool) []string {
	l := sb.Limits
	if b == BackendRootless {
		var lim []string
		for _, x := range []struct {
			name string
			set  bool
		}{{"memory", l.Memory > 0}, {"pids", l.Pids > 0}, {"cpus", l.CPUs > 0}} {
			if x.set {
				lim = append(lim, x.name)
			}
		}
		if len(lim) == 0 {
			return nil
		}
		d := h.RootlessDelegation()
		ok, why := d.Enforces(LimitControllers(sb))
		if ok {
			return nil
		}
		return []string{"limits " + strings.Join(lim, ", ") + ": " + why + "; " + d.Fix()}
	}
	var out []string
	for _, x := range []struct {
		what string
		set  bool
	}{
		{"memory limit (" + spec.FormatBytes(l.Memory) + ")", l.Memory > 0},
		{fmt.Sprintf("pids limit (%d)", l.Pids), l.Pids > 0},
		{fmt.Sprintf("cpus limit (%g)", l.CPUs), l.CPUs > 0},
	} {
		switch {
		case !x.set:
		case refuse:
			out = append(out, x.what+": macOS has no per-sandbox resource limits; this works on Linux (cgroups); set require_os_sandbox: false to run without it")
		default:
			out = append(out, x.what+": not enforced on macOS; this works on Linux (cgroups)")
		}
	}
	return out
}

// Enforcement is what a backend does with one sandbox.
type Enforcement struct {
	// Backend is the backend asked.
	Backend Backend
	// Sandbox is what the backend builds: the requested sandbox with the
	// unenforced parts dropped (narrower, never wider). It is nil when sb
	// was nil.
	Sandbox *spec.Sandbox
	// Refused are the parts that stop the run.
	Refused []Gap
	// Unenforced are the parts dropped and reported, which the sandbox
	// allows with require_os_sandbox: false.
	Unenforced []Gap
}

// Enforce looks sb up in the table of what backend b cannot enforce on a
// host with facts h. A part is refused when the sandbox requires OS
// enforcement or when dropping it would change what the sandbox means;
// otherwise it is dropped from the returned sandbox and listed as
// unenforced.
func Enforce(b Backend, sb *spec.Sandbox, h HostFacts) Enforcement {
	e := Enforcement{Backend: b}
	if sb == nil {
		return e
	}
	e.Sandbox = sb.Clone()
	for _, rule := range gapTable {
		if !rule.appliesTo(b, h) {
			continue
		}
		refuse := rule.always || sb.RequireOSSandbox
		found := rule.find(b, sb, h, refuse)
		for _, d := range found {
			g := Gap{Key: rule.key, Detail: d}
			if refuse {
				e.Refused = append(e.Refused, g)
			} else {
				e.Unenforced = append(e.Unenforced, g)
			}
		}
		if len(found) > 0 && !refuse && rule.narrow != nil {
			rule.narrow(e.Sandbox)
		}
	}
	return e
}

// Err is the refusal of the parts in e.Refused, or nil: an
// *UnenforceableError, which matches ErrUnenforceable.
func (e Enforcement) Err() error {
	if len(e.Refused) == 0 {
		return nil
	}
	ue := &UnenforceableError{Backend: e.Backend, Features: details(e.Refused)}
	if e.Backend != BackendSeatbelt {
		// The Linux sentences say why; the way out is the same for all.
		ue.Hint = "set require_os_sandbox: false to run without them (cordon then reports what was not enforced)"
	}
	return ue
}

// RefusedDetails and UnenforcedDetails are the sentences of the gaps, as
// Result.Unenforced and the warnings carry them.
func (e Enforcement) RefusedDetails() []string { return details(e.Refused) }

// UnenforcedDetails: see RefusedDetails.
func (e Enforcement) UnenforcedDetails() []string { return details(e.Unenforced) }

// UnenforcedKeys are the keys of the unenforced parts, for the OCI spec's
// annotation.
func (e Enforcement) UnenforcedKeys() []string {
	var out []string
	for _, g := range e.Unenforced {
		if !slices.Contains(out, g.Key) {
			out = append(out, g.Key)
		}
	}
	return out
}

// listedFor reports whether rule is a limitation of backend b on host h:
// the rootless limits row is not when the user's delegated cgroup offers
// every controller.
func (rule gapRule) listedFor(b Backend, h HostFacts) bool {
	if !rule.appliesTo(b, h) {
		return false
	}
	if rule.key == "limits" && b == BackendRootless {
		ok, _ := h.RootlessDelegation().Enforces([]string{"memory", "pids", "cpu"})
		return !ok
	}
	return true
}

// Limitations lists what backend b cannot enforce at all, one line per row
// of the table, for doctor.
func Limitations(b Backend, h HostFacts) []string {
	var out []string
	for _, rule := range gapTable {
		if rule.listedFor(b, h) {
			out = append(out, rule.key+": "+rule.summary)
		}
	}
	return out
}

// LimitationCaps are b's rows of the table on host h as doctor reports
// them.
func LimitationCaps(b Backend, h HostFacts) []Capability {
	var caps []Capability
	for _, rule := range gapTable {
		if rule.listedFor(b, h) {
			caps = append(caps, Capability{Name: "not enforced: " + rule.key, OK: false, Detail: rule.summary + " (" + string(b) + ")"})
		}
	}
	return caps
}

// UnenforceableError lists the parts of a sandbox a backend cannot enforce.
// It matches ErrUnenforceable.
type UnenforceableError struct {
	// Backend is the backend that refused.
	Backend Backend
	// Features are the refused parts, one sentence each.
	Features []string
	// Hint, when set, is the way out shared by every feature.
	Hint string
}

// Error renders every refused feature and the way out.
func (e *UnenforceableError) Error() string {
	msg := e.Backend.describe() + " cannot enforce this sandbox: " + strings.Join(e.Features, "; ")
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Is matches ErrUnenforceable.
func (e *UnenforceableError) Is(target error) bool { return target == ErrUnenforceable }

func details(gs []Gap) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Detail)
	}
	return out
}

// belowArea returns the part of p below the deepest workspace or mount that
// holds it, or p itself when none does.
func belowArea(sb *spec.Sandbox, p string) string {
	best := ""
	consider := func(a string) {
		if a != "" && (p == a || strings.HasPrefix(p, strings.TrimSuffix(a, "/")+"/")) && len(a) > len(best) {
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
