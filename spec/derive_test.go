package spec

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// buildTree creates entries under dir: "dir a/b", "file a/c", "symlink l ../x".
func buildTree(t testing.TB, dir string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		f := strings.Fields(e)
		p := filepath.Join(dir, f[1])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch f[0] {
		case "dir":
			err = os.MkdirAll(p, 0o755)
		case "file":
			err = os.WriteFile(p, []byte(f[1]), 0o644)
		case "symlink":
			err = os.Symlink(f[2], p)
		default:
			t.Fatalf("bad tree entry %q", e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// wideningRules returns the sorted rule ids of every *WideningError in err.
func wideningRules(err error) []string {
	var rules []string
	var walk func(error)
	walk = func(e error) {
		if we, ok := e.(*WideningError); ok {
			rules = append(rules, we.Rule)
			return
		}
		if u, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	sort.Strings(rules)
	return rules
}

// deriveFixture is a parent sandbox on a temporary tree:
//
//	T/ws            root, rw
//	T/ws/src, docs  directories; docs/link -> ../src; escape -> T/outside
//	T/ws/cache      host directory covered by the "cache" mount
//	T/cache-src     source of the "cache" mount (target T/ws/cache, rw)
//	T/data          source of the "data" mount (target /data, ro)
//	T/tools         source of an unnamed mount (target /tools, ro)
type deriveFixture struct {
	dir, root string
	parent    *Sandbox
}

func newDeriveFixture(t *testing.T) deriveFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	buildTree(t, dir,
		"dir ws/src/pkg", "dir ws/docs", "dir ws/cache", "dir ws2", "file ws/notes.txt",
		"dir outside", "dir cache-src", "dir data", "dir tools",
		"symlink ws/docs/link ../src", "symlink ws/escape ../outside", "symlink ws/tocache cache",
		"symlink ws/dangling nowhere")
	root := filepath.Join(dir, "ws")
	parent := &Sandbox{
		Root: root,
		Mounts: []Mount{
			{Source: filepath.Join(dir, "cache-src"), Target: filepath.Join(root, "cache"), Name: "cache", Suffixes: []string{".json"}},
			{Source: filepath.Join(dir, "data"), Target: "/data", Name: "data", Readonly: true},
			{Source: filepath.Join(dir, "tools"), Target: "/tools", Readonly: true},
		},
		Deny:             []string{filepath.Join(root, ".env")},
		Protect:          joinAll(root, DefaultProtect),
		Network:          Network{Enabled: true, Allow: []string{"*.pypi.org", "github.com:443"}},
		System:           System{Kind: SystemHost},
		Limits:           Limits{Timeout: time.Minute, Memory: 1 << 30, Pids: 100},
		Env:              Env{Pass: []string{"PATH"}, Set: map[string]string{"A": "b"}},
		RequireOSSandbox: true,
		StrictDeny:       true,
		Lineage:          []string{"main"},
	}
	return deriveFixture{dir: dir, root: root, parent: parent}
}

func TestDeriveNarrows(t *testing.T) {
	fx := newDeriveFixture(t)
	root := fx.root
	cache, data, tools := fx.parent.Mounts[0], fx.parent.Mounts[1], fx.parent.Mounts[2]
	ro := func(m Mount) Mount { m.Readonly = true; return m }
	tests := []struct {
		name  string
		req   *WorkerRequest
		check func(t *testing.T, c *Sandbox)
	}{
		{"pure function", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, "")
			eq(t, len(c.Mounts), 0)
			eq(t, c.Network, Network{})
			eq(t, c.Limits, fx.parent.Limits)
			eq(t, c.Deny, fx.parent.Deny)
			eq(t, c.Protect, fx.parent.Protect)
			eq(t, c.Env, fx.parent.Env)
		}},
		{"empty request keeps workspace and mounts, network off", &WorkerRequest{}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root)
			eq(t, c.Readonly, false)
			eq(t, c.Mounts, fx.parent.Mounts)
			eq(t, c.Network, Network{})
		}},
		{"readonly", &WorkerRequest{Readonly: true}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Readonly, true)
			eq(t, c.Mounts, []Mount{ro(cache), data, tools})
		}},
		{"restrict relative", &WorkerRequest{Restrict: "src"}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root+"/src")
			eq(t, c.Mounts, []Mount{data, tools}) // cache lies in the old root, outside src
		}},
		{"restrict absolute", &WorkerRequest{Restrict: root + "/src/pkg"}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root+"/src/pkg")
		}},
		{"restrict to the root itself", &WorkerRequest{Restrict: "."}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root)
			eq(t, c.Mounts, fx.parent.Mounts)
		}},
		{"restrict through an inner symlink resolves it", &WorkerRequest{Restrict: "docs/link"}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root+"/src")
		}},
		{"restrict keeps zones selected by name", &WorkerRequest{Restrict: "src", Zones: []ZoneRequest{{Name: "cache", Mode: ModeRO}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root+"/src")
			eq(t, c.Mounts, []Mount{ro(cache)})
		}},
		{"zones: one mount only, no workspace", &WorkerRequest{Zones: []ZoneRequest{{Name: "data"}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, "")
			eq(t, c.Mounts, []Mount{data})
		}},
		{"zones: workspace ro, unnamed mount dropped, hidden dir masked", &WorkerRequest{Zones: []ZoneRequest{{Name: "workspace", Mode: ModeRO}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, root)
			eq(t, c.Readonly, true)
			eq(t, len(c.Mounts), 0)
			eq(t, c.Deny, []string{root + "/.env", root + "/cache"})
		}},
		{"zones: rw on rw zone", &WorkerRequest{Zones: []ZoneRequest{{Name: "cache", Mode: ModeRW}, {Name: "workspace"}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Readonly, false)
			eq(t, c.Mounts, []Mount{cache})
		}},
		{"zones: empty list keeps nothing", &WorkerRequest{Zones: []ZoneRequest{}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, "")
			eq(t, len(c.Mounts), 0)
		}},
		{"readonly wins over zone mode", &WorkerRequest{Readonly: true, Zones: []ZoneRequest{{Name: "cache", Mode: ModeRW}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Mounts, []Mount{ro(cache)})
		}},
		{"network off explicitly", &WorkerRequest{Network: &Network{}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Network, Network{})
		}},
		{"network allow narrowed", &WorkerRequest{Network: &Network{Enabled: true, Allow: []string{"Files.PyPI.org:443", "github.com:443"}}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Network, Network{Enabled: true, Allow: []string{"files.pypi.org:443", "github.com:443"}})
		}},
		{"limits lowered and inherited", &WorkerRequest{Limits: Limits{Timeout: time.Second, Pids: 100, CPUs: 0.5, Output: 1 << 10}}, func(t *testing.T, c *Sandbox) {
			eq(t, c.Limits, Limits{Timeout: time.Second, Memory: 1 << 30, Pids: 100, CPUs: 0.5, Output: 1 << 10})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fx.parent.Clone()
			c, err := Derive(fx.parent, &Worker{Name: "w", Sandbox: tt.req}, 5)
			if err != nil {
				t.Fatalf("Derive: %v", err)
			}
			if !reflect.DeepEqual(fx.parent, before) {
				t.Fatal("Derive modified the parent")
			}
			eq(t, c.Lineage, []string{"main", "w"})
			eq(t, c.System, fx.parent.System)
			eq(t, c.RequireOSSandbox, true)
			eq(t, c.StrictDeny, true) // inherited: a worker cannot loosen it
			if err := checkNormalized(c); err != nil {
				t.Errorf("child not normalized: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestDeriveRefusesWidening(t *testing.T) {
	fx := newDeriveFixture(t)
	ro := *fx.parent.Clone()
	ro.Readonly = true
	off := *fx.parent.Clone()
	off.Network = Network{}
	open := *fx.parent.Clone()
	open.Network = Network{Enabled: true}
	tests := []struct {
		name   string
		parent *Sandbox
		req    *WorkerRequest
		depth  int
		rules  []string
		detail string
	}{
		{"rw on ro zone", nil, &WorkerRequest{Zones: []ZoneRequest{{Name: "data", Mode: ModeRW}}}, 5, []string{RuleZoneMode}, `asks rw on zone "data" but the parent has it read-only`},
		{"rw on ro workspace", &ro, &WorkerRequest{Zones: []ZoneRequest{{Name: "workspace", Mode: ModeRW}}}, 5, []string{RuleZoneMode}, "the parent has its workspace " + fx.root + " read-only"},
		{"unknown zone lists the parent's", nil, &WorkerRequest{Zones: []ZoneRequest{{Name: "secrets"}}}, 5, []string{RuleUnknownZone}, `asks for zone "secrets", but the parent's zones are: workspace (rw), cache (rw), data (ro)`},
		{"restrict outside, relative", nil, &WorkerRequest{Restrict: "../ws2"}, 5, []string{RuleRestrictOutside}, "outside the parent's workspace " + fx.root},
		{"restrict outside, absolute", nil, &WorkerRequest{Restrict: "/etc"}, 5, []string{RuleRestrictOutside}, "/etc, which is outside the parent's workspace"},
		{"restrict through a symlink out", nil, &WorkerRequest{Restrict: "escape"}, 5, []string{RuleRestrictOutside}, "leads through a symlink to " + fx.dir + "/outside"},
		{"restrict into a mount", nil, &WorkerRequest{Restrict: "cache"}, 5, []string{RuleRestrictOutside}, `lies in the mount at ` + fx.root + `/cache (zone "cache"; select it with zones instead)`},
		{"restrict via symlink into a mount", nil, &WorkerRequest{Restrict: "tocache"}, 5, []string{RuleRestrictOutside}, "lies in the mount at"},
		{"restrict missing", nil, &WorkerRequest{Restrict: "nope"}, 5, []string{RuleRestrictOutside}, "not an existing directory"},
		{"restrict dangling symlink", nil, &WorkerRequest{Restrict: "dangling"}, 5, []string{RuleRestrictOutside}, "not an existing directory"},
		{"restrict to a file", nil, &WorkerRequest{Restrict: "notes.txt"}, 5, []string{RuleRestrictOutside}, "is not a directory"},
		{"restrict without parent workspace", &Sandbox{System: System{Kind: SystemHost}}, &WorkerRequest{Restrict: "src"}, 5, []string{RuleRestrictOutside}, "the parent has no workspace"},
		{"network when parent has none", &off, &WorkerRequest{Network: &Network{Enabled: true}}, 5, []string{RuleNetwork}, "the parent has none"},
		{"allow list when parent has none", &off, &WorkerRequest{Network: &Network{Enabled: true, Allow: []string{"a.com"}}}, 5, []string{RuleNetwork}, "the parent has none"},
		{"unrestricted network under an allow list", nil, &WorkerRequest{Network: &Network{Enabled: true}}, 5, []string{RuleNetworkAllow}, "unrestricted network access but the parent allows only: *.pypi.org, github.com:443"},
		{"allow entry not covered", nil, &WorkerRequest{Network: &Network{Enabled: true, Allow: []string{"pypi.org", "github.com", "evil.com", "files.pypi.org"}}}, 5, []string{RuleNetworkAllow}, "asks for pypi.org, github.com, evil.com but the parent allows only"},
		{"limits above the parent's", nil, &WorkerRequest{Limits: Limits{Timeout: time.Hour, Memory: 2 << 30, Pids: 101}}, 5, []string{"limit-memory", "limit-pids", "limit-timeout"}, "asks memory=2GiB but the parent allows at most 1GiB"},
		{"cpus file_size output above the parent's", &Sandbox{Root: fx.root, Limits: Limits{CPUs: 1, FileSize: 10, Output: 10}, System: System{Kind: SystemHost}}, &WorkerRequest{Limits: Limits{CPUs: 1.5, FileSize: 11, Output: 11}}, 5, []string{"limit-cpus", "limit-file_size", "limit-output"}, "asks cpus=1.5 but the parent allows at most 1"},
		{"depth", nil, &WorkerRequest{}, 1, []string{RuleMaxDepth}, "the worker chain main > w is 2 deep, but delegation.max_depth is 1"},
		{"pure worker beyond depth", nil, nil, 1, []string{RuleMaxDepth}, "is 2 deep"},
		{"everything at once", &off, &WorkerRequest{Restrict: "/", Zones: []ZoneRequest{{Name: "x"}, {Name: "data", Mode: ModeRW}}, Network: &Network{Enabled: true}, Limits: Limits{Memory: 4 << 30}}, 1,
			[]string{"limit-memory", RuleMaxDepth, RuleNetwork, RuleRestrictOutside, RuleUnknownZone, RuleZoneMode}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := tt.parent
			if parent == nil {
				parent = fx.parent
			}
			before := parent.Clone()
			c, err := Derive(parent, &Worker{Name: "w", Sandbox: tt.req}, tt.depth)
			if err == nil {
				t.Fatalf("Derive succeeded: %+v", c)
			}
			if c != nil {
				t.Error("a child was returned with the error")
			}
			if !reflect.DeepEqual(parent, before) {
				t.Error("Derive modified the parent")
			}
			if !errors.Is(err, ErrWidening) {
				t.Errorf("not ErrWidening: %v", err)
			}
			var we *WideningError
			if !errors.As(err, &we) || we.Worker != "w" {
				t.Errorf("no *WideningError naming the worker: %v", err)
			}
			eq(t, wideningRules(err), tt.rules)
			if !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("error lacks %q:\n%v", tt.detail, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, `worker "w": rule `) {
					t.Errorf("line does not name the worker and rule: %q", line)
				}
			}
		})
	}
}

func TestDeriveWideningMessage(t *testing.T) {
	err := &WideningError{Worker: "fmt", Rule: RuleZoneMode, Detail: `asks rw on zone "cache" but the parent has it read-only`}
	eq(t, err.Error(), `worker "fmt": rule zone-mode: asks rw on zone "cache" but the parent has it read-only`)
	if !errors.Is(err, ErrWidening) || errors.Is(err, ErrInvalidConfig) {
		t.Error("WideningError must match ErrWidening only")
	}
}

// TestDeriveRestrictSymlinkEscape: a restrict path that is a symlink out of
// the workspace is refused, and the child never comes to exist.
func TestDeriveRestrictSymlinkEscape(t *testing.T) {
	fx := newDeriveFixture(t)
	c, err := Derive(fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Restrict: "escape"}}, 5)
	if !errors.Is(err, ErrWidening) || c != nil {
		t.Fatalf("Derive = %+v, %v; want a restrict-outside refusal", c, err)
	}
	eq(t, wideningRules(err), []string{RuleRestrictOutside})
}

// TestDeriveMasksUncoveredMountpoint: when a child drops a mount that lies
// inside its workspace, the host directory the mount covered (invisible in
// the parent) is denied to the child rather than revealed.
func TestDeriveMasksUncoveredMountpoint(t *testing.T) {
	fx := newDeriveFixture(t)
	hidden := filepath.Join(fx.root, "cache")
	c, err := Derive(fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Zones: []ZoneRequest{{Name: "workspace"}}}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Mounts {
		if m.Target == hidden {
			t.Fatalf("mount at %s kept: %+v", hidden, c.Mounts)
		}
	}
	if !containsString(c.Deny, hidden) {
		t.Errorf("deny = %v, want it to hold %s", c.Deny, hidden)
	}
	// Keeping the mount needs no mask.
	c, err = Derive(fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if containsString(c.Deny, hidden) {
		t.Errorf("deny = %v masks a mount that is kept", c.Deny)
	}
}

func TestDeriveChain(t *testing.T) {
	fx := newDeriveFixture(t)
	fx.parent.Lineage = nil
	a, err := Derive(fx.parent, &Worker{Name: "a", Sandbox: &WorkerRequest{Restrict: "src", Limits: Limits{Memory: 1 << 20}}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Derive(a, &Worker{Name: "b", Sandbox: &WorkerRequest{Restrict: "pkg", Readonly: true}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, b.Root, fx.root+"/src/pkg")
	eq(t, b.Readonly, true)
	eq(t, b.Lineage, []string{"a", "b"})
	eq(t, b.Limits.Memory, int64(1<<20))
	// The grandchild cannot go back up or raise the limit again.
	_, err = Derive(b, &Worker{Name: "c", Sandbox: &WorkerRequest{Restrict: fx.root + "/src", Limits: Limits{Memory: 1 << 30}}}, 3)
	eq(t, wideningRules(err), []string{"limit-memory", RuleRestrictOutside})
	_, err = Derive(b, &Worker{Name: "c"}, 2)
	eq(t, wideningRules(err), []string{RuleMaxDepth})
}

func TestDeriveRejectsBadInput(t *testing.T) {
	fx := newDeriveFixture(t)
	bad := fx.parent.Clone()
	bad.Root = "relative/root"
	tests := []struct {
		name   string
		parent *Sandbox
		w      *Worker
	}{
		{"nil parent", nil, &Worker{Name: "w"}},
		{"nil worker", fx.parent, nil},
		{"parent not normalized", bad, &Worker{Name: "w"}},
		{"worker without a name", fx.parent, &Worker{}},
		{"bad zone mode", fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Zones: []ZoneRequest{{Name: "cache", Mode: "rwx"}}}}},
		{"negative limit", fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Limits: Limits{Memory: -1}}}},
		{"bad allow entry", fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Network: &Network{Enabled: true, Allow: []string{"http://x"}}}}},
		{"NUL in restrict", fx.parent, &Worker{Name: "w", Sandbox: &WorkerRequest{Restrict: "src\x00"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Derive(tt.parent, tt.w, 5)
			if err == nil || c != nil {
				t.Fatalf("Derive = %+v, %v; want an error", c, err)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("not ErrInvalidConfig: %v", err)
			}
		})
	}
}

func TestCloneIsDeep(t *testing.T) {
	fx := newDeriveFixture(t)
	c := fx.parent.Clone()
	if !reflect.DeepEqual(c, fx.parent) {
		t.Fatal("clone differs")
	}
	c.Mounts[0].Suffixes[0] = ".x"
	c.Mounts[1].Name = "changed"
	c.Deny[0] = "/x"
	c.Protect[0] = "/x"
	c.Network.Allow[0] = "x.com"
	c.Env.Pass[0] = "X"
	c.Env.Set["A"] = "changed"
	c.Lineage[0] = "x"
	if fx.parent.Mounts[0].Suffixes[0] != ".json" || fx.parent.Mounts[1].Name != "data" ||
		fx.parent.Deny[0] == "/x" || fx.parent.Protect[0] == "/x" || fx.parent.Network.Allow[0] != "*.pypi.org" ||
		fx.parent.Env.Pass[0] != "PATH" || fx.parent.Env.Set["A"] != "b" || fx.parent.Lineage[0] != "main" {
		t.Errorf("changing the clone changed the original: %+v", fx.parent)
	}
	if (*Sandbox)(nil).Clone() != nil {
		t.Error("Clone of nil is not nil")
	}
}

func TestZoneNames(t *testing.T) {
	fx := newDeriveFixture(t)
	eq(t, fx.parent.ZoneNames(), []string{"workspace", "cache", "data"})
	eq(t, (&Sandbox{}).ZoneNames(), []string(nil))
}

// TestWorkerFixtures derives every worker in testdata/workers from the
// parent in testdata/good/zones.yaml.
func TestWorkerFixtures(t *testing.T) {
	cfg, err := Load(filepath.Join(fixtures, "good", "zones.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	parent := &cfg.Sandbox
	project := parent.Root
	tests := []struct {
		file  string
		rules []string // nil: Derive must succeed
		check func(t *testing.T, c *Sandbox)
	}{
		{"fmt.worker.yaml", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, "")
			eq(t, len(c.Mounts), 1)
			eq(t, c.Mounts[0].Target, "/cache")
			eq(t, c.Mounts[0].Readonly, false)
		}},
		{"reviewer.worker.yaml", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, project+"/src")
			eq(t, c.Readonly, true)
			for _, m := range c.Mounts {
				if !m.Readonly {
					t.Errorf("mount %s is writable", m.Target)
				}
			}
		}},
		{"validator.worker.yaml", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, "")
			eq(t, len(c.Mounts), 0)
			eq(t, c.Network, Network{})
			eq(t, c.Limits, parent.Limits)
		}},
		{"fetcher.worker.yaml", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, project)
			eq(t, c.Readonly, true)
			eq(t, c.Network, Network{Enabled: true, Allow: []string{"files.pypi.org:443"}})
			eq(t, c.Limits, Limits{Timeout: time.Minute, Memory: 256 << 20, Pids: 512})
		}},
		{"docs-writer.worker.yaml", nil, func(t *testing.T, c *Sandbox) {
			eq(t, c.Root, project+"/docs")
			eq(t, c.Readonly, false)
			eq(t, c.Limits.Pids, int64(64))
			eq(t, c.Deny, parent.Deny)
			eq(t, c.Protect, parent.Protect)
		}},
		{"data-writer.worker.yaml", []string{RuleZoneMode}, nil},
		{"escape.worker.yaml", []string{RuleRestrictOutside}, nil},
		{"greedy.worker.yaml", []string{"limit-memory", "limit-timeout", RuleNetworkAllow, RuleRestrictOutside, RuleUnknownZone, RuleZoneMode}, nil},
	}
	files, _ := filepath.Glob(filepath.Join(fixtures, "workers", "*.worker.yaml"))
	if len(files) != len(tests) {
		t.Errorf("%d worker fixtures but %d table rows", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			w, err := LoadWorker(filepath.Join(fixtures, "workers", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Derive(parent, w, cfg.Delegation.MaxDepth)
			if tt.rules != nil {
				eq(t, wideningRules(err), tt.rules)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eq(t, c.Lineage, []string{w.Name})
			tt.check(t, c)
		})
	}
}
