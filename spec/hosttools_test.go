package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseCachesAndToolchains: caches takes true, false or a list of
// known names (duplicates merged); a config without the keys keeps every
// cache and the toolchains, as the workspace profile does; a bad value
// names the key and what IS allowed.
func TestParseCachesAndToolchains(t *testing.T) {
	tests := []struct {
		name       string
		yml        string
		caches     []string
		toolchains bool
		problem    string
	}{
		{"defaults", ``, CacheNames, true, ""},
		{"true", "sandbox: {caches: true}", CacheNames, true, ""},
		{"false", "sandbox: {caches: false, toolchains: false}", nil, false, ""},
		{"list", "sandbox: {caches: [go, npm, go]}", []string{"go", "npm"}, true, ""},
		{"empty list", "sandbox: {caches: []}", []string{}, true, ""},
		{"unknown name", "sandbox: {caches: [go, maven]}", nil, true, `sandbox.caches[1] (line 1): "maven" is not a cache cordon keeps`},
		{"mapping", "sandbox: {caches: {go: true}}", nil, true, "sandbox.caches (line 1): must be true, false or a list"},
		{"toolchains not a bool", "sandbox: {toolchains: maybe}", nil, true, "sandbox.toolchains"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, tt.yml)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) || !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("err = %v, want one with %q", err, tt.problem)
				}
				if strings.Contains(tt.problem, "caches") && !strings.Contains(err.Error(), "go, npm, pip") {
					t.Errorf("the fix does not list the caches: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Sandbox.Caches, tt.caches) || cfg.Sandbox.Toolchains != tt.toolchains {
				t.Errorf("caches %q toolchains %v, want %q %v", cfg.Sandbox.Caches, cfg.Sandbox.Toolchains, tt.caches, tt.toolchains)
			}
		})
	}
}

// TestProfilesCaches: every built-in profile keeps the caches and mounts
// the toolchains, except strict, which has neither.
func TestProfilesCaches(t *testing.T) {
	for _, name := range ProfileNames() {
		cfg, err := Profile(name, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		want := name != "strict"
		if got := len(cfg.Sandbox.Caches) > 0; got != want || cfg.Sandbox.Toolchains != want {
			t.Errorf("%s: caches %q toolchains %v, want on=%v", name, cfg.Sandbox.Caches, cfg.Sandbox.Toolchains, want)
		}
	}
}

// hostToolsSandbox is a workspace sandbox in a fresh folder with the
// given caches and toolchains.
func hostToolsSandbox(t *testing.T, caches []string, toolchains bool) *Sandbox {
	t.Helper()
	cfg, err := Profile("workspace", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sb := &cfg.Sandbox
	sb.Caches, sb.Toolchains = caches, toolchains
	return sb
}

func mountOf(sb *Sandbox, target string) (Mount, bool) {
	for _, m := range sb.Mounts {
		if m.Target == target {
			return m, true
		}
	}
	return Mount{}, false
}

// TestAddHostToolsCaches: each cache is its own folder, read-write at
// /cordon/cache/NAME with its variables (every cache: their folder at
// /cordon/cache, one mount); a config's env.set wins; a
// missing folder is left out; a second call adds nothing; a worker's
// sandbox gets nothing.
func TestAddHostToolsCaches(t *testing.T) {
	cache := t.TempDir()
	buildTree(t, cache, "dir go", "dir npm")
	sb := hostToolsSandbox(t, []string{"go", "npm", "pip"}, false)
	sb.Env.Set = map[string]string{"npm_config_cache": "/mine"}
	AddHostTools(sb, HostTools{CacheDir: cache})
	m, ok := mountOf(sb, "/cordon/cache/go")
	if !ok || m.Source != filepath.Join(cache, "go") || m.Readonly {
		t.Fatalf("go cache mount = %+v %v", m, ok)
	}
	if _, ok := mountOf(sb, "/cordon/cache/pip"); ok {
		t.Error("pip's folder does not exist but was mounted")
	}
	for k, want := range map[string]string{"GOCACHE": "/cordon/cache/go/build", "GOMODCACHE": "/cordon/cache/go/mod", "npm_config_cache": "/mine"} {
		if got := sb.Env.Set[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	n := len(sb.Mounts)
	AddHostTools(sb, HostTools{CacheDir: cache})
	if len(sb.Mounts) != n {
		t.Errorf("a second call added mounts: %d, then %d", n, len(sb.Mounts))
	}
	// Every cache: one mount of the folder that holds them.
	all := hostToolsSandbox(t, CacheNames, false)
	AddHostTools(all, HostTools{CacheDir: cache})
	if m, ok := mountOf(all, CacheTarget); !ok || m.Source != cache || len(all.Mounts) != 1 || all.Env.Set["PIP_CACHE_DIR"] != "/cordon/cache/pip" {
		t.Errorf("every cache: mounts %+v, PIP_CACHE_DIR %q", all.Mounts, all.Env.Set["PIP_CACHE_DIR"])
	}
	// A backend that cannot remap paths (Seatbelt) gets the cache at its
	// host folder, and the variables point there.
	same := hostToolsSandbox(t, []string{"go"}, false)
	AddHostTools(same, HostTools{CacheDir: cache, SamePaths: true})
	if m, ok := mountOf(same, filepath.Join(cache, "go")); !ok || m.Source != m.Target || same.Env.Set["GOCACHE"] != filepath.Join(cache, "go", "build") {
		t.Errorf("SamePaths: mount %+v %v, GOCACHE %q", m, ok, same.Env.Set["GOCACHE"])
	}
	worker := hostToolsSandbox(t, []string{"go"}, false)
	worker.Lineage = []string{"w"}
	AddHostTools(worker, HostTools{CacheDir: cache})
	if len(worker.Mounts) != 0 || worker.Env.Set["GOCACHE"] != "" {
		t.Errorf("a worker's sandbox got host tools: %+v", worker.Mounts)
	}
}

// TestToolchains: each PATH entry below the home maps to its toolchain's
// root (the known layouts, a prefix with lib/, else the entry), each once,
// parents first; entries outside the home, the home itself and missing
// folders are left out; PATH is the sandbox's (env.set, else the caller's
// when passed).
func TestToolchains(t *testing.T) {
	home := t.TempDir()
	buildTree(t, home, "dir .pyenv/shims", "dir .pyenv/plugins/venv/shims", "dir .cargo/bin", "file .cargo/credentials.toml",
		"dir .rustup/toolchains/stable/bin", "dir .nvm/versions/node/v22/bin", "dir miniconda3/bin", "dir miniconda3/lib",
		"dir tools/bin", "dir .local/bin", "dir .local/lib", "dir go/bin", "dir go/pkg/mod", "symlink linked .cargo/bin")
	outside := t.TempDir()
	entries := []string{".pyenv/plugins/venv/shims", ".pyenv/shims", ".cargo/bin", ".nvm/versions/node/v22/bin",
		"miniconda3/bin", "tools/bin", ".local/bin", "go/bin", "missing/bin", "linked", "", "."}
	var path []string
	for _, e := range entries {
		path = append(path, filepath.Join(home, e))
	}
	path = append(path, outside, "relative/bin")
	lookup := func(k string) (string, bool) {
		if k == "PATH" {
			return strings.Join(path, ":"), true
		}
		return "", false
	}
	sb := hostToolsSandbox(t, nil, true)
	got := map[string]Toolchain{}
	var order []string
	for _, tc := range Toolchains(sb, home, lookup) {
		rel, _ := filepath.Rel(home, tc.Target)
		got[rel] = tc
		order = append(order, rel)
	}
	want := map[string]map[string]string{
		".pyenv":     {"PYENV_ROOT": filepath.Join(home, ".pyenv")},
		".cargo/bin": {},
		".rustup":    {"RUSTUP_HOME": filepath.Join(home, ".rustup")},
		".nvm":       {"NVM_DIR": filepath.Join(home, ".nvm")},
		"miniconda3": {},
		"tools/bin":  {},
		".local/bin": {},
		"go/bin":     {},
	}
	if len(got) != len(want) {
		t.Errorf("toolchains %q, want %d of them", order, len(want))
	}
	for rel, env := range want {
		tc, ok := got[rel]
		if !ok {
			t.Errorf("no toolchain %s (got %q)", rel, order)
			continue
		}
		if tc.Source != filepath.Join(home, rel) {
			t.Errorf("%s: source %s", rel, tc.Source)
		}
		for k, v := range env {
			if tc.Env[k] != v {
				t.Errorf("%s: %s = %q, want %q", rel, k, tc.Env[k], v)
			}
		}
	}
	for i := 1; i < len(order); i++ {
		if len(order[i]) < len(order[i-1]) {
			t.Errorf("not parents first: %q", order)
		}
	}
	sb.Env.Pass = slices.DeleteFunc(slices.Clone(sb.Env.Pass), func(s string) bool { return s == "PATH" })
	if tcs := Toolchains(sb, home, lookup); len(tcs) != 0 {
		t.Errorf("PATH not passed, yet toolchains %+v", tcs)
	}
	sb.Env.Set = map[string]string{"PATH": filepath.Join(home, "go/bin")}
	if tcs := Toolchains(sb, home, lookup); len(tcs) != 1 || tcs[0].Target != filepath.Join(home, "go/bin") {
		t.Errorf("env.set PATH: toolchains %+v", tcs)
	}
}

// TestAddHostToolsNeverDenied: a toolchain folder or a CA file that the
// deny list covers is never mounted; a CA file the sandbox shows already
// is not mounted again; one outside is mounted read-only at its own path.
func TestAddHostToolsNeverDenied(t *testing.T) {
	home, ca := t.TempDir(), t.TempDir()
	buildTree(t, home, "dir .cargo/bin", "dir secret/bin", "dir open/bin")
	buildTree(t, ca, "file proxy.pem", "file denied.pem")
	sb := hostToolsSandbox(t, nil, true)
	sb.Deny = append(sb.Deny, filepath.Join(home, "secret"), filepath.Join(ca, "denied.pem"))
	inside := filepath.Join(sb.Root, "ca.pem")
	if err := os.WriteFile(inside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"PATH":                strings.Join([]string{filepath.Join(home, ".cargo/bin"), filepath.Join(home, "secret/bin"), filepath.Join(home, "open/bin")}, ":"),
		"SSL_CERT_FILE":       filepath.Join(ca, "proxy.pem"),
		"NODE_EXTRA_CA_CERTS": filepath.Join(ca, "denied.pem"),
		"REQUESTS_CA_BUNDLE":  inside,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	AddHostTools(sb, HostTools{Home: home, Lookup: lookup})
	for _, m := range sb.Mounts {
		if within(m.Source, filepath.Join(home, "secret")) || m.Source == filepath.Join(ca, "denied.pem") || m.Target == inside {
			t.Errorf("mounted %+v", m)
		}
	}
	for _, p := range []string{filepath.Join(home, ".cargo/bin"), filepath.Join(home, "open/bin"), filepath.Join(ca, "proxy.pem")} {
		if m, ok := mountOf(sb, p); !ok || !m.Readonly || m.Source != p {
			t.Errorf("%s: mount %+v %v, want read-only", p, m, ok)
		}
	}
	if got := ProcessEnvFrom(sb, lookup); !slices.Contains(got, "SSL_CERT_FILE="+env["SSL_CERT_FILE"]) {
		t.Errorf("SSL_CERT_FILE not passed: %q", got)
	}
}
