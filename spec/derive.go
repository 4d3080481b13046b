package spec

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Clone returns a deep copy of s: no slice or map is shared with s.
func (s *Sandbox) Clone() *Sandbox {
	if s == nil {
		return nil
	}
	c := *s
	c.Mounts = nil
	if s.Mounts != nil {
		c.Mounts = make([]Mount, len(s.Mounts))
		for i, m := range s.Mounts {
			m.Suffixes = cloneStrings(m.Suffixes)
			c.Mounts[i] = m
		}
	}
	c.Deny = cloneStrings(s.Deny)
	if s.Overlay != nil {
		o := *s.Overlay
		c.Overlay = &o
	}
	c.Protect = cloneStrings(s.Protect)
	c.Network.Allow = cloneStrings(s.Network.Allow)
	c.Env.Pass = cloneStrings(s.Env.Pass)
	c.Caches = cloneStrings(s.Caches)
	if s.Env.Set != nil {
		c.Env.Set = make(map[string]string, len(s.Env.Set))
		for k, v := range s.Env.Set {
			c.Env.Set[k] = v
		}
	}
	c.Lineage = cloneStrings(s.Lineage)
	c.Guarded = cloneStrings(s.Guarded)
	return &c
}

// WritableSources returns the host directories sb lets its command write:
// the workspace unless read-only, and every read-write mount's source.
func WritableSources(sb *Sandbox) []string {
	var out []string
	if sb.Root != "" && !sb.Readonly {
		out = append(out, sb.Root)
	}
	for _, m := range sb.Mounts {
		if !m.Readonly {
			out = append(out, m.Source)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append(make([]string, 0, len(s)), s...)
}

// Derive returns the sandbox of worker w started from parent: parent ∩ the
// worker's request. It never widens and never modifies parent; the result
// is a fresh copy.
//
//   - The lineage grows by w.Name; beyond maxDepth it is refused.
//   - A worker without a sandbox section (a pure function) gets no
//     workspace, no mounts and no network.
//   - restrict narrows the workspace to one of its directories (symlinks
//     are resolved on the host and must stay inside); mounts inside the old
//     workspace but outside the new one are dropped unless zones select them.
//   - zones, when given, keep only the named zones ("workspace" is the
//     root); mode ro narrows, mode rw must already be rw in the parent.
//   - readonly makes the workspace and every mount read-only.
//   - The network is off unless asked for, and what is asked for must be
//     covered by the parent's policy.
//   - A limit that is set may only be lower than the parent's; an unset one
//     is inherited.
//   - deny, strict_deny, protect, env, system and require_os_sandbox are
//     inherited.
//   - workspace_mode: overlay (OverlayName) is inherited by a worker with a
//     writable workspace, and dropped for one with none or a read-only one.
//
// Every widening is reported at once: the error joins one *WideningError
// per refusal (matching ErrWidening), plus a *FieldError for each malformed
// field of a request that was built in code.
func Derive(parent *Sandbox, w *Worker, maxDepth int) (*Sandbox, error) {
	if parent == nil || w == nil {
		return nil, fmt.Errorf("%w: Derive needs a parent sandbox and a worker", ErrInvalidConfig)
	}
	if err := checkNormalized(parent); err != nil {
		return nil, fmt.Errorf("the parent sandbox is not valid: %w", err)
	}
	if !zoneNameRe().MatchString(w.Name) {
		return nil, &FieldError{Field: "name", Problem: fmt.Sprintf("%q is not a valid worker name", w.Name), Fix: zoneNameFix}
	}
	dv := &deriver{parent: parent, w: w, child: parent.Clone()}
	dv.child.Lineage = append(dv.child.Lineage, w.Name)
	// The parent's command can keep writing where it could: the child's
	// sources must never be reached through a symlink it planted there.
	for _, g := range WritableSources(parent) {
		if !containsString(dv.child.Guarded, g) {
			dv.child.Guarded = append(dv.child.Guarded, g)
		}
	}
	if len(dv.child.Lineage) > maxDepth {
		dv.widen(RuleMaxDepth, "the worker chain %s is %d deep, but delegation.max_depth is %d",
			strings.Join(dv.child.Lineage, " > "), len(dv.child.Lineage), maxDepth)
	}
	if w.Sandbox == nil {
		dv.child.Root = ""
		dv.child.Readonly = false
		dv.child.Mounts = nil
		dv.child.Network = Network{}
	} else {
		dv.request(w.Sandbox)
	}
	if len(dv.errs) > 0 {
		return nil, errors.Join(dv.errs...)
	}
	if dv.child.Root == "" || dv.child.Readonly {
		// Nothing of the workspace to write: no overlay to write to. A
		// writable narrower root keeps the name, and its run is refused
		// as an overlay of another workspace: it never writes the host.
		dv.child.OverlayName = ""
	}
	return dv.child, nil
}

// deriver holds the state of one Derive call.
type deriver struct {
	parent *Sandbox
	w      *Worker
	child  *Sandbox
	errs   []error
}

func (dv *deriver) widen(rule, format string, args ...any) {
	dv.errs = append(dv.errs, &WideningError{Worker: dv.w.Name, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

func (dv *deriver) invalid(field, problem, fix string) {
	dv.errs = append(dv.errs, &FieldError{Field: fmt.Sprintf("worker %q: %s", dv.w.Name, field), Problem: problem, Fix: fix})
}

// zones returns the parent's zones and whether each is read-only.
func (dv *deriver) zones() (map[string]bool, string) {
	z := map[string]bool{}
	var names []string
	if dv.parent.Root != "" {
		z[WorkspaceZone] = dv.parent.Readonly
		names = append(names, WorkspaceZone+" ("+mode(dv.parent.Readonly)+")")
	}
	for _, m := range dv.parent.Mounts {
		if m.Name != "" {
			z[m.Name] = m.Readonly
			names = append(names, m.Name+" ("+mode(m.Readonly)+")")
		}
	}
	if len(names) == 0 {
		return z, "the parent has no zones"
	}
	return z, "the parent's zones are: " + strings.Join(names, ", ")
}

func mode(readonly bool) string {
	if readonly {
		return "ro"
	}
	return "rw"
}

// request applies a worker's sandbox section.
func (dv *deriver) request(req *WorkerRequest) {
	p, c := dv.parent, dv.child

	parentZones, zoneList := dv.zones()
	zonesGiven := req.Zones != nil
	asked := map[string]ZoneMode{}
	for i, z := range req.Zones {
		if z.Mode != "" && z.Mode != ModeRO && z.Mode != ModeRW {
			dv.invalid(index("sandbox.zones", i)+".mode", fmt.Sprintf("%q is not a zone mode", z.Mode), "use ro or rw")
			continue
		}
		ro, ok := parentZones[z.Name]
		if !ok {
			dv.widen(RuleUnknownZone, "asks for zone %q, but %s", z.Name, zoneList)
			continue
		}
		if z.Mode == ModeRW && ro {
			what := "it"
			if z.Name == WorkspaceZone {
				what = "its workspace " + p.Root
			}
			dv.widen(RuleZoneMode, "asks rw on zone %q but the parent has %s read-only; ask for mode ro", z.Name, what)
		}
		asked[z.Name] = z.Mode
	}

	// The workspace.
	oldRoot := p.Root
	if req.Restrict != "" {
		c.Root = dv.restrict(req.Restrict)
	} else if _, ok := asked[WorkspaceZone]; zonesGiven && !ok {
		c.Root = ""
	}
	c.Readonly = p.Readonly || req.Readonly || asked[WorkspaceZone] == ModeRO
	if c.Root == "" {
		c.Readonly = false
	}

	// The mounts. A dropped mount that lies inside the child's workspace
	// becomes a deny entry: the directory it covered in the parent was never
	// visible there, so the child must not see it either.
	c.Mounts = nil
	for _, m := range p.Mounts {
		zm, listed := asked[m.Name]
		drop := zonesGiven && (m.Name == "" || !listed) ||
			!zonesGiven && req.Restrict != "" && within(m.Target, oldRoot) && (c.Root == "" || !within(m.Target, c.Root))
		if drop {
			if c.Root != "" && within(m.Target, c.Root) && !containsString(c.Deny, m.Target) {
				c.Deny = append(c.Deny, m.Target)
			}
			continue
		}
		m.Suffixes = cloneStrings(m.Suffixes)
		m.Readonly = m.Readonly || req.Readonly || zm == ModeRO
		c.Mounts = append(c.Mounts, m)
	}

	dv.network(req.Network)
	dv.limits(req.Limits)
}

// restrict resolves a restrict path to the child's root, or "" when it is
// refused. The answer is the real directory on the host, expressed below
// the parent's root, so that a symlink cannot lead outside and the child's
// paths stay in the parent's namespace.
func (dv *deriver) restrict(r string) string {
	p := dv.parent
	if prob := pathProblem(r); prob != "" {
		dv.invalid("sandbox.restrict", prob, "give a directory of the parent's workspace")
		return ""
	}
	if p.Root == "" {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, but the parent has no workspace", r)
		return ""
	}
	want := r
	if !filepath.IsAbs(want) {
		want = filepath.Join(p.Root, want)
	}
	want = filepath.Clean(want)
	if !within(want, p.Root) {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, which is outside the parent's workspace %s", want, p.Root)
		return ""
	}
	if dv.inMount(want) {
		return ""
	}
	realRoot, err := filepath.EvalSymlinks(p.Root)
	if err != nil {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, but the parent's workspace %s cannot be resolved: %v", want, p.Root, err)
		return ""
	}
	real, err := filepath.EvalSymlinks(want)
	if err != nil {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, which is not an existing directory of the parent's workspace %s", want, p.Root)
		return ""
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, which leads through a symlink to %s, outside the parent's workspace %s", want, real, p.Root)
		return ""
	}
	if prob := dirProblem(real); prob != "" {
		dv.widen(RuleRestrictOutside, "asks to restrict to %s, but %s; give a directory of the parent's workspace %s", want, prob, p.Root)
		return ""
	}
	root := filepath.Join(p.Root, rel)
	if root != want && dv.inMount(root) {
		return ""
	}
	return root
}

// inMount refuses a restrict path that lies in a mount placed inside the
// workspace: there the sandbox shows the mount, not the workspace's own
// directory, which the parent cannot see.
func (dv *deriver) inMount(path string) bool {
	for _, m := range dv.parent.Mounts {
		if m.Target != dv.parent.Root && within(path, m.Target) {
			zone := ""
			if m.Name != "" {
				zone = fmt.Sprintf(" (zone %q; select it with zones instead)", m.Name)
			}
			dv.widen(RuleRestrictOutside, "asks to restrict to %s, which lies in the mount at %s%s, not in the parent's workspace %s", path, m.Target, zone, dv.parent.Root)
			return true
		}
	}
	return false
}

// network applies the requested network: off unless asked for, and only
// what the parent's policy covers.
func (dv *deriver) network(req *Network) {
	p := dv.parent.Network
	c := &dv.child.Network
	*c = Network{}
	if req == nil || !req.Enabled {
		return
	}
	want := Network{Enabled: true}
	for i, a := range req.Allow {
		norm, prob := normalizeAllow(a)
		if prob != "" {
			dv.invalid(index("sandbox.network.allow", i), prob, `write host[:port]: "github.com:443", "*.pypi.org", or tcp://host:port: "tcp://db.example.com:5432"`)
			return
		}
		want.Allow = append(want.Allow, norm)
	}
	ok, missing := networkCovers(p, want)
	switch {
	case ok:
		*c = want
	case !p.Enabled:
		dv.widen(RuleNetwork, "asks for network access but the parent has none; use network: false")
	case len(want.Allow) == 0:
		dv.widen(RuleNetworkAllow, "asks for unrestricted network access but the parent allows only: %s; ask for allow: [...] within that list", strings.Join(p.Allow, ", "))
	default:
		dv.widen(RuleNetworkAllow, "asks for %s but the parent allows only: %s", strings.Join(missing, ", "), strings.Join(p.Allow, ", "))
	}
}

// limits lowers the parent's limits to the requested ones.
func (dv *deriver) limits(req Limits) {
	p := dv.parent.Limits
	c := &dv.child.Limits
	bytes := func(n int64) string { return FormatBytes(n) }
	count := func(n int64) string { return fmt.Sprint(n) }
	dur := func(n int64) string { return time.Duration(n).String() }
	c.Timeout = time.Duration(dv.lower("timeout", int64(req.Timeout), int64(p.Timeout), dur))
	c.Memory = dv.lower("memory", req.Memory, p.Memory, bytes)
	c.Pids = dv.lower("pids", req.Pids, p.Pids, count)
	c.FileSize = dv.lower("file_size", req.FileSize, p.FileSize, bytes)
	c.Output = dv.lower("output", req.Output, p.Output, bytes)
	switch {
	case req.CPUs == 0:
		c.CPUs = p.CPUs
	case !(req.CPUs > 0) || req.CPUs != req.CPUs:
		dv.invalid("sandbox.limits.cpus", fmt.Sprintf("%g is not above zero", req.CPUs), "give a number of cores above zero")
	case p.CPUs > 0 && req.CPUs > p.CPUs:
		dv.widen(LimitRule("cpus"), "asks cpus=%g but the parent allows at most %g", req.CPUs, p.CPUs)
	default:
		c.CPUs = req.CPUs
	}
}

// lower returns the child's value of one integer limit.
func (dv *deriver) lower(key string, req, parent int64, show func(int64) string) int64 {
	switch {
	case req == 0:
		return parent
	case req < 0:
		dv.invalid("sandbox.limits."+key, fmt.Sprintf("%s is below zero", show(req)), "give a value above zero, or leave it out to inherit the parent's")
		return parent
	case parent > 0 && req > parent:
		dv.widen(LimitRule(key), "asks %s=%s but the parent allows at most %s", key, show(req), show(parent))
		return parent
	}
	return req
}

// ZoneNames returns the zones a worker derived from s may ask for:
// "workspace" when s has a root, then each named mount, sorted.
func (s *Sandbox) ZoneNames() []string {
	var out []string
	for _, m := range s.Mounts {
		if m.Name != "" {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	if s.Root != "" {
		out = append([]string{WorkspaceZone}, out...)
	}
	return out
}
