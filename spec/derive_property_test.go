package spec

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// propTree is the host tree the generated sandboxes live on:
//
//	T/ws                  the root of every generated parent
//	T/ws/a/b, T/ws/c      plain directories
//	T/ws/mnt              a directory that some parents cover with a mount
//	T/ws/la -> a          a symlink inside the workspace
//	T/ws/lm -> mnt        a symlink to the (maybe) covered directory
//	T/ws/out -> ../outside, T/ws/file (a file), T/ws2 (a sibling)
type propTree struct{ dir, ws string }

func newPropTree(t *testing.T) propTree {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	buildTree(t, dir, "dir ws/a/b", "dir ws/c", "dir ws/mnt", "symlink ws/la a", "symlink ws/lm mnt",
		"dir outside", "symlink ws/out ../outside", "file ws/file", "dir ws2",
		"dir src/m0", "dir src/m1", "dir src/m2", "dir src/m3")
	return propTree{dir: dir, ws: filepath.Join(dir, "ws")}
}

var (
	propZoneNames = []string{"cache", "data", "tools", "", ""}
	propAllow     = []string{"*.x.org", "a.x.org", "a.x.org:443", "b.y.com", "b.y.com:80", "*.a.x.org", "c.z.net:8443", "10.0.0.1", "[::1]:53"}
	propPorts     = []string{"80", "443", "8443", "53", "1"}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.Intn(len(s))] }

func subset(r *rand.Rand, s []string) []string {
	var out []string
	for _, e := range s {
		if r.Intn(3) == 0 {
			out = append(out, e)
		}
	}
	return out
}

// genParent builds a random valid, normalized parent sandbox.
func (pt propTree) genParent(r *rand.Rand) *Sandbox {
	sb := &Sandbox{System: System{Kind: pick(r, []SystemKind{SystemHost, SystemNone})}, RequireOSSandbox: r.Intn(2) == 0}
	if r.Intn(8) != 0 {
		sb.Root = pt.ws
		sb.Readonly = r.Intn(3) == 0
	}
	targets := []string{"/opt/m", "/data", pt.ws + "/mnt", pt.ws + "/c/inner", "/var/cache/x"}
	r.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	used := map[string]bool{}
	for i := 0; i < r.Intn(4); i++ {
		m := Mount{Source: fmt.Sprintf("%s/src/m%d", pt.dir, i), Target: targets[i], Readonly: r.Intn(2) == 0}
		if n := pick(r, propZoneNames); n != "" && !used[n] {
			used[n] = true
			m.Name = n
		}
		if r.Intn(3) == 0 {
			m.Suffixes = []string{".txt"}
		}
		sb.Mounts = append(sb.Mounts, m)
	}
	for _, p := range []string{"secret", "a/.env", "/etc/x"} {
		if r.Intn(2) == 0 {
			sb.Deny = append(sb.Deny, filepath.Join(pt.ws, p))
		}
	}
	if r.Intn(2) == 0 {
		sb.Protect = joinAll(pt.ws, DefaultProtect[:3])
	}
	switch r.Intn(3) {
	case 1:
		sb.Network = Network{Enabled: true}
	case 2:
		if a := subset(r, propAllow); len(a) > 0 {
			sb.Network = Network{Enabled: true, Allow: a}
		}
	}
	sb.Limits = genLimits(r, Limits{})
	for i := 0; i < r.Intn(4); i++ {
		sb.Lineage = append(sb.Lineage, fmt.Sprintf("p%d", i))
	}
	return sb
}

// genLimits returns random limits; around base when base has a value.
func genLimits(r *rand.Rand, base Limits) Limits {
	val := func(b int64) int64 {
		switch r.Intn(3) {
		case 0:
			return 0
		case 1:
			if b > 0 {
				return b + int64(r.Intn(3)) - 1 // below, equal or above
			}
		}
		return int64(r.Intn(1000) + 1)
	}
	l := Limits{
		Timeout:  time.Duration(val(int64(base.Timeout))),
		Memory:   val(base.Memory),
		Pids:     val(base.Pids),
		FileSize: val(base.FileSize),
		Output:   val(base.Output),
	}
	if l.Timeout < 0 {
		l.Timeout = 0
	}
	for _, p := range []*int64{&l.Memory, &l.Pids, &l.FileSize, &l.Output} {
		if *p < 0 {
			*p = 0
		}
	}
	switch r.Intn(3) {
	case 1:
		l.CPUs = base.CPUs + float64(r.Intn(3)-1)*0.5
	case 2:
		l.CPUs = float64(r.Intn(8)+1) / 2
	}
	if l.CPUs < 0 {
		l.CPUs = 0
	}
	return l
}

// restrictCase is a restrict request with its expected outcome for a
// parent rooted at ws.
type restrictCase struct {
	path string
	// ok reports whether the restrict is allowed for parent, and the root
	// it must produce.
	ok func(parent *Sandbox) (bool, string)
}

func (pt propTree) restricts() []restrictCase {
	inside := func(rel string) func(*Sandbox) (bool, string) {
		return func(p *Sandbox) (bool, string) {
			return p.Root != "", filepath.Join(pt.ws, rel)
		}
	}
	never := func(*Sandbox) (bool, string) { return false, "" }
	coveredByMount := func(p *Sandbox) (bool, string) {
		for _, m := range p.Mounts {
			if m.Target == pt.ws+"/mnt" {
				return false, ""
			}
		}
		return p.Root != "", pt.ws + "/mnt"
	}
	return []restrictCase{
		{"a", inside("a")}, {"a/b", inside("a/b")}, {pt.ws + "/a/b/", inside("a/b")}, {".", inside("")},
		{"la", inside("a")}, {"a/../c", inside("c")}, {"c", inside("c")},
		{"mnt", coveredByMount}, {"lm", coveredByMount},
		{"out", never}, {"..", never}, {"../ws2", never}, {pt.dir + "/ws2", never}, {"/etc", never},
		{"missing", never}, {"file", never}, {"/", never},
	}
}

// admits reports whether net lets a connection to host:port through,
// written independently of allowCovers.
func admits(net Network, host, port string) bool {
	if !net.Enabled {
		return false
	}
	if len(net.Allow) == 0 {
		return true
	}
	for _, a := range net.Allow {
		h, p := splitAllow(a)
		if p != "" && p != port {
			continue
		}
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
			return true
		}
	}
	return false
}

// destinations are concrete hosts and ports that witness any difference
// between two policies built from propAllow.
func destinations() [][2]string {
	var out [][2]string
	for _, a := range propAllow {
		h, _ := splitAllow(a)
		h = strings.Replace(h, "*", "w", 1)
		for _, p := range propPorts {
			out = append(out, [2]string{h, p})
		}
	}
	out = append(out, [2]string{"evil.com", "443"})
	return out
}

func TestDeriveProperty(t *testing.T) {
	pt := newPropTree(t)
	restricts := pt.restricts()
	dests := destinations()
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < 1000; i++ {
			parent := pt.genParent(r)
			if err := checkNormalized(parent); err != nil {
				t.Fatalf("generator made a bad parent: %v", err)
			}
			var req *WorkerRequest
			var rc restrictCase
			if r.Intn(6) != 0 {
				req = &WorkerRequest{Readonly: r.Intn(4) == 0, Limits: genLimits(r, parent.Limits)}
				if r.Intn(2) == 0 {
					rc = pick(r, restricts)
					req.Restrict = rc.path
				}
				if r.Intn(2) == 0 {
					req.Zones = []ZoneRequest{}
					for _, n := range subset(r, []string{"workspace", "cache", "data", "tools", "nope"}) {
						req.Zones = append(req.Zones, ZoneRequest{Name: n, Mode: pick(r, []ZoneMode{"", ModeRO, ModeRW})})
					}
				}
				switch r.Intn(4) {
				case 1:
					req.Network = &Network{}
				case 2:
					req.Network = &Network{Enabled: true}
				case 3:
					if a := subset(r, propAllow); len(a) > 0 {
						req.Network = &Network{Enabled: true, Allow: a}
					}
				}
			}
			maxDepth := r.Intn(4) + 1
			name := fmt.Sprintf("w%d", i)
			t.Run(fmt.Sprintf("seed%d/%d", seed, i), func(t *testing.T) {
				checkDerive(t, parent, &Worker{Name: name, Sandbox: req}, maxDepth, rc, dests)
			})
		}
	}
}

// checkDerive runs Derive and checks it against an oracle for the rules it
// must refuse, and against the narrowing properties when it succeeds.
func checkDerive(t *testing.T, parent *Sandbox, w *Worker, maxDepth int, rc restrictCase, dests [][2]string) {
	before := parent.Clone()
	child, err := Derive(parent, w, maxDepth)
	if !reflect.DeepEqual(parent, before) {
		t.Fatal("Derive modified the parent")
	}

	// The oracle: every rule this request breaks.
	want := map[string]bool{}
	if len(parent.Lineage)+1 > maxDepth {
		want[RuleMaxDepth] = true
	}
	wantRoot := parent.Root
	if req := w.Sandbox; req != nil {
		zones := map[string]bool{}
		if parent.Root != "" {
			zones[WorkspaceZone] = parent.Readonly
		}
		for _, m := range parent.Mounts {
			if m.Name != "" {
				zones[m.Name] = m.Readonly
			}
		}
		for _, z := range req.Zones {
			ro, ok := zones[z.Name]
			if !ok {
				want[RuleUnknownZone] = true
			} else if z.Mode == ModeRW && ro {
				want[RuleZoneMode] = true
			}
		}
		if req.Restrict != "" {
			ok, root := rc.ok(parent)
			if !ok {
				want[RuleRestrictOutside] = true
			}
			wantRoot = root
		}
		if req.Network != nil && req.Network.Enabled {
			if !parent.Network.Enabled {
				want[RuleNetwork] = true
			} else {
				for _, d := range dests {
					if admits(*req.Network, d[0], d[1]) && !admits(parent.Network, d[0], d[1]) {
						want[RuleNetworkAllow] = true
					}
				}
			}
		}
		pl, cl := parent.Limits, req.Limits
		for _, l := range []struct {
			key  string
			c, p float64
		}{
			{"timeout", float64(cl.Timeout), float64(pl.Timeout)}, {"memory", float64(cl.Memory), float64(pl.Memory)},
			{"pids", float64(cl.Pids), float64(pl.Pids)}, {"file_size", float64(cl.FileSize), float64(pl.FileSize)},
			{"cpus", cl.CPUs, pl.CPUs}, {"output", float64(cl.Output), float64(pl.Output)},
		} {
			if l.c > 0 && l.p > 0 && l.c > l.p {
				want[LimitRule(l.key)] = true
			}
		}
	}
	var wantRules []string
	for r := range want {
		wantRules = append(wantRules, r)
	}
	sort.Strings(wantRules)

	if len(wantRules) > 0 {
		if err == nil || child != nil || !errors.Is(err, ErrWidening) {
			t.Fatalf("request breaks %v but Derive = %+v, %v\nparent %+v\nrequest %+v", wantRules, child, err, parent, w.Sandbox)
		}
		got := wideningRules(err)
		got = dedupe(got)
		if !reflect.DeepEqual(got, wantRules) {
			t.Fatalf("rules = %v, want %v: %v\nparent %+v\nrequest %+v", got, wantRules, err, parent, w.Sandbox)
		}
		return
	}
	if err != nil {
		t.Fatalf("Derive refused a narrowing request: %v\nparent %+v\nrequest %+v", err, parent, w.Sandbox)
	}
	if w.Sandbox != nil && w.Sandbox.Restrict != "" && child.Root != wantRoot {
		t.Errorf("root = %q, want %q", child.Root, wantRoot)
	}
	// Least privilege: a worker gets only what it declares.
	if w.Sandbox == nil && (child.Root != "" || len(child.Mounts) > 0 || child.Network.Enabled) {
		t.Errorf("pure worker got a workspace, mounts or network: %+v", child)
	}
	if w.Sandbox != nil && (w.Sandbox.Network == nil || !w.Sandbox.Network.Enabled) && child.Network.Enabled {
		t.Errorf("network on without asking: %+v", child.Network)
	}
	assertNarrower(t, parent, child, w.Name, dests)
}

func dedupe(s []string) []string {
	var out []string
	for i, e := range s {
		if i == 0 || e != s[i-1] {
			out = append(out, e)
		}
	}
	return out
}

// assertNarrower checks that child is never wider than parent.
func assertNarrower(t *testing.T, parent, child *Sandbox, name string, dests [][2]string) {
	t.Helper()
	if err := checkNormalized(child); err != nil {
		t.Errorf("child not normalized: %v", err)
	}
	eq(t, child.Lineage, append(cloneStrings(parent.Lineage), name))
	if child.Root != "" {
		if parent.Root == "" || !within(child.Root, parent.Root) {
			t.Errorf("child root %s is outside the parent's %q", child.Root, parent.Root)
		}
		for _, m := range parent.Mounts {
			if m.Target != parent.Root && within(child.Root, m.Target) {
				t.Errorf("child root %s lies in the parent's mount at %s", child.Root, m.Target)
			}
		}
		if !child.Readonly && parent.Readonly {
			t.Errorf("child root is writable, the parent's is not")
		}
	}
	for _, cm := range child.Mounts {
		found := false
		for _, pm := range parent.Mounts {
			if cm.Source == pm.Source && cm.Target == pm.Target && cm.Name == pm.Name &&
				reflect.DeepEqual(cm.Suffixes, pm.Suffixes) && cm.MaxFileBytes == pm.MaxFileBytes {
				found = true
				if !cm.Readonly && pm.Readonly {
					t.Errorf("mount %s is writable in the child only", cm.Target)
				}
			}
		}
		if !found {
			t.Errorf("child mount %+v is not a parent mount", cm)
		}
	}
	// A parent mount inside the child's workspace that the child lacks must
	// be masked, since the parent never saw the directory under it.
	for _, pm := range parent.Mounts {
		if child.Root == "" || !within(pm.Target, child.Root) {
			continue
		}
		kept := false
		for _, cm := range child.Mounts {
			kept = kept || cm.Target == pm.Target
		}
		if !kept && !containsString(child.Deny, pm.Target) {
			t.Errorf("dropped mount at %s inside the child root is not denied", pm.Target)
		}
	}
	for _, d := range dests {
		if admits(child.Network, d[0], d[1]) && !admits(parent.Network, d[0], d[1]) {
			t.Errorf("child admits %s:%s, the parent does not", d[0], d[1])
		}
	}
	pl, cl := parent.Limits, child.Limits
	for _, l := range []struct {
		key  string
		c, p float64
	}{
		{"timeout", float64(cl.Timeout), float64(pl.Timeout)}, {"memory", float64(cl.Memory), float64(pl.Memory)},
		{"pids", float64(cl.Pids), float64(pl.Pids)}, {"file_size", float64(cl.FileSize), float64(pl.FileSize)},
		{"cpus", cl.CPUs, pl.CPUs}, {"output", float64(cl.Output), float64(pl.Output)},
	} {
		if l.p > 0 && (l.c <= 0 || l.c > l.p) {
			t.Errorf("limit %s = %v, parent %v", l.key, l.c, l.p)
		}
	}
	for _, d := range parent.Deny {
		if !containsString(child.Deny, d) {
			t.Errorf("deny %s lost", d)
		}
	}
	for _, p := range parent.Protect {
		if !containsString(child.Protect, p) {
			t.Errorf("protect %s lost", p)
		}
	}
	eq(t, child.Env, parent.Env)
	eq(t, child.System, parent.System)
	eq(t, child.RequireOSSandbox, parent.RequireOSSandbox)
}
