package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixtures is the shared fixture folder at the top of the repository.
const fixtures = "../testdata"

// fixtureHome points $HOME at testdata/home, which holds .cache/pip.
func fixtureHome(t testing.TB) string {
	t.Helper()
	home, err := filepath.Abs(filepath.Join(fixtures, "home"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	return home
}

func abs(t testing.TB, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// problems returns every *FieldError inside err.
func problems(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if fe, ok := e.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

func TestGoodFixtures(t *testing.T) {
	fixtureHome(t)
	files, err := filepath.Glob(filepath.Join(fixtures, "good", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no good fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if err := checkNormalized(&cfg.Sandbox); err != nil {
				t.Errorf("not normalized: %v", err)
			}
			if cfg.Source != f {
				t.Errorf("Source = %q, want %q", cfg.Source, f)
			}
			if cfg.Delegation.MaxDepth < 1 {
				t.Errorf("MaxDepth = %d", cfg.Delegation.MaxDepth)
			}
		})
	}
}

func TestFullFixture(t *testing.T) {
	home := fixtureHome(t)
	cfg, err := Load(filepath.Join(fixtures, "good", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tree := abs(t, filepath.Join(fixtures, "tree"))
	root := filepath.Join(tree, "project")
	want := &Config{
		Sandbox: Sandbox{
			Root: root,
			Mounts: []Mount{
				{Source: filepath.Join(tree, "cache"), Target: "/cache", Name: "cache", Suffixes: []string{".json", ".txt"}, MaxFileBytes: 1000000},
				{Source: filepath.Join(tree, "data"), Target: filepath.Join(tree, "data"), Readonly: true, Name: "data", MaxFileBytes: 10 << 20},
			},
			Deny:    []string{root + "/.env", root + "/secrets", "/etc/hostname", home + "/.ssh"},
			Protect: []string{root + "/.git/hooks", root + "/.git/config"},
			Network: Network{Enabled: true, Allow: []string{"github.com:443", "*.pypi.org", "[::1]:8080", "10.0.0.1"}},
			System:  System{Kind: SystemHost},
			Limits: Limits{Timeout: 30 * time.Second, Memory: 512 << 20, Pids: 256, FileSize: 100 << 20,
				CPUs: 1.5, Output: 1 << 20},
			Env:              Env{Pass: []string{"PATH", "LANG", "TERM"}, Set: map[string]string{"FOO": "bar", "RETRIES": "3"}},
			Caches:           CacheNames,
			Toolchains:       true,
			RequireOSSandbox: true,
		},
		Delegation:    Delegation{MaxDepth: 3},
		Session:       Session{IdleTimeout: 10 * time.Minute, MaxLifetime: 2 * time.Hour},
		Audit:         abs(t, filepath.Join(fixtures, "audit.log")),
		AuditRequired: true,
		Source:        filepath.Join(fixtures, "good", "full.yaml"),
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Load(full.yaml) =\n%+v\nwant\n%+v", cfg, want)
	}
}

func TestBadFixtures(t *testing.T) {
	fixtureHome(t)
	files, err := filepath.Glob(filepath.Join(fixtures, "bad", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			wantRaw, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatalf("every bad fixture needs a .err file: %v", err)
			}
			cfg, err := Load(f)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Load returned a config along with the error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error does not match ErrInvalidConfig: %v", err)
			}
			if len(problems(err)) == 0 {
				t.Errorf("error holds no *FieldError: %v", err)
			}
			msg := err.Error()
			for _, want := range strings.Split(strings.TrimSpace(string(wantRaw)), "\n") {
				if !strings.Contains(msg, want) {
					t.Errorf("error lacks %q; got:\n%s", want, msg)
				}
			}
			for _, p := range problems(err) {
				if p.Fix == "" {
					t.Errorf("problem without a fix: %v", p)
				}
			}
		})
	}
	// Every .err file belongs to a fixture.
	errs, _ := filepath.Glob(filepath.Join(fixtures, "bad", "*.err"))
	for _, e := range errs {
		if _, err := os.Stat(strings.TrimSuffix(e, ".err") + ".yaml"); err != nil {
			t.Errorf("%s has no fixture", e)
		}
	}
}

// TestAllProblemsAtOnce proves that one Load reports every problem of a file,
// each with its own line, in line order.
func TestAllProblemsAtOnce(t *testing.T) {
	_, err := Load(filepath.Join(fixtures, "bad", "many-problems.yaml"))
	got := problems(err)
	want := []struct {
		field string
		line  int
	}{
		{"sandbox.mounts[0].target", 6},
		{"sandbox.mounts[1].source", 7},
		{"sandbox.network", 9},
		{"sandbox.limits.memory", 11},
		{"sandbox.limits.pids", 12},
		{"sandbox.limits.timeout", 13},
		{"sandbox.colour", 14},
		{"delegation.max_depth", 16},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if got[i].Field != w.field || got[i].Line != w.line {
			t.Errorf("problem %d = %s line %d, want %s line %d", i, got[i].Field, got[i].Line, w.field, w.line)
		}
	}
}

// parse runs Parse with the fixture tree as base folder.
func parse(t *testing.T, yml string) (*Config, error) {
	t.Helper()
	return Parse([]byte(yml), filepath.Join(fixtures, "tree"), "test.yaml")
}

func TestParseNormalizes(t *testing.T) {
	home := fixtureHome(t)
	tree := abs(t, filepath.Join(fixtures, "tree"))
	project := filepath.Join(tree, "project")
	tests := []struct {
		name  string
		yml   string
		check func(t *testing.T, c *Config)
	}{
		{"root defaults to the config's folder", ``, func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, tree)
		}},
		{"relative root", "sandbox: {root: project/}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, project)
		}},
		{"absolute root is cleaned", "sandbox: {root: " + project + "/src/../}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, project)
		}},
		{"tilde root", "sandbox: {root: ~/.cache}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, home+"/.cache")
		}},
		{"bare tilde", `sandbox: {root: "~", allow_home_workspace: true}`, func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, home)
			eq(t, c.Sandbox.AllowHomeWorkspace, true)
		}},
		{"defaults", "sandbox: {}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.RequireOSSandbox, true)
			eq(t, c.Sandbox.System, System{Kind: SystemHost})
			eq(t, c.Sandbox.Network, Network{})
			eq(t, c.Sandbox.Readonly, false)
			eq(t, c.Delegation.MaxDepth, DefaultMaxDepth)
			eq(t, c.Sandbox.Env.Pass, DefaultEnvPass)
			eq(t, c.Sandbox.Protect, joinAll(tree, DefaultProtect))
			eq(t, c.Audit, "")
		}},
		{"protect off", "sandbox: {protect_defaults: false}", func(t *testing.T, c *Config) {
			eq(t, len(c.Sandbox.Protect), 0)
		}},
		{"protect: [] keeps the built-in list", "sandbox: {protect: []}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Protect, joinAll(tree, DefaultProtect))
		}},
		// Issue 23: uncommenting the starter file's protect: [secrets/]
		// made .envrc, .vscode and .bashrc writable.
		{"protect adds to the built-in list", "sandbox: {protect: [secrets/, .envrc]}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Protect, append(joinAll(tree, DefaultProtect), tree+"/secrets"))
		}},
		{"protect_defaults: false with a list", "sandbox: {protect: [secrets/], protect_defaults: false}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Protect, []string{tree + "/secrets"})
		}},
		{"protect null keeps the default", "sandbox: {protect: }", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Protect, joinAll(tree, DefaultProtect))
		}},
		{"deny and protect: relative, absolute, tilde, trailing slash, duplicates", `
sandbox:
  root: project
  deny: [secrets/, ./secrets, /etc/ssh/, ~/.aws, "../outside"]
  protect: [.git/hooks/]
  protect_defaults: false`, func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Deny, []string{project + "/secrets", "/etc/ssh", home + "/.aws", tree + "/outside"})
			eq(t, c.Sandbox.Protect, []string{project + "/.git/hooks"})
		}},
		{"mount target defaults to the source", "sandbox: {mounts: [{source: cache/}]}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Mounts, []Mount{{Source: tree + "/cache", Target: tree + "/cache"}})
		}},
		{"mount target under the root and with a trailing slash", `
sandbox:
  root: project
  mounts: [{source: cache, target: "` + project + `/cache/", name: c-1.x}]`, func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Mounts, []Mount{{Source: tree + "/cache", Target: project + "/cache", Name: "c-1.x"}})
		}},
		{"mount target with tilde", "sandbox: {mounts: [{source: cache, target: ~/c}]}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Mounts[0].Target, home+"/c")
		}},
		{"mount of a file", "sandbox: {mounts: [{source: data/table.csv, target: /t.csv, readonly: true}]}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Mounts, []Mount{{Source: tree + "/data/table.csv", Target: "/t.csv", Readonly: true}})
		}},
		{"suffixes deduplicated, empty list kept", "sandbox: {mounts: [{source: cache, suffixes: [.a, .a, .b]}, {source: data, suffixes: []}]}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Mounts[0].Suffixes, []string{".a", ".b"})
			eq(t, len(c.Sandbox.Mounts[1].Suffixes), 0)
		}},
		{"network false", "sandbox: {network: false}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Network, Network{})
		}},
		{"network true", "sandbox: {network: true}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Network, Network{Enabled: true})
		}},
		{"network allow is canonical and deduplicated", `sandbox: {network: {allow: [GitHub.COM:443, "github.com:443", "example.org.", "[0:0::1]"]}}`, func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Network, Network{Enabled: true, Allow: []string{"github.com:443", "example.org", "[::1]"}})
		}},
		{"system none", "sandbox: {system: none}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.System, System{Kind: SystemNone})
		}},
		{"system rootfs", "sandbox: {system: " + tree + "/data/}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.System, System{Kind: SystemRootfs, Rootfs: tree + "/data"})
		}},
		{"limits in every unit", "sandbox: {limits: {timeout: 1h30m, memory: 1.5GiB, pids: 10, file_size: 4096, cpus: 2, output: 64k}}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Limits, Limits{Timeout: 90 * time.Minute, Memory: 3 << 29, Pids: 10, FileSize: 4096, CPUs: 2, Output: 64 << 10})
		}},
		{"env pass off and set values as written", "sandbox: {env: {pass: [], set: {A: 1, B: true, C: \"\", D: x y}}}", func(t *testing.T, c *Config) {
			eq(t, len(c.Sandbox.Env.Pass), 0)
			eq(t, c.Sandbox.Env.Set, map[string]string{"A": "1", "B": "true", "C": "", "D": "x y"})
		}},
		{"require_os_sandbox false", "sandbox: {require_os_sandbox: false}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.RequireOSSandbox, false)
			eq(t, c.Sandbox.StrictDeny, false)
		}},
		{"strict_deny true", "sandbox: {strict_deny: true}", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.StrictDeny, true)
			if !strings.Contains(Summarize(&c.Sandbox).Table(), "deny:    strict (strict_deny") {
				t.Fatalf("explain does not show strict_deny: %s", Summarize(&c.Sandbox).Table())
			}
		}},
		{"max_depth and audit", "delegation: {max_depth: 1}\naudit: logs/audit.jsonl", func(t *testing.T, c *Config) {
			eq(t, c.Delegation.MaxDepth, 1)
			eq(t, c.Audit, tree+"/logs/audit.jsonl")
		}},
		{"null sections are defaults", "sandbox:\ndelegation:\naudit:", func(t *testing.T, c *Config) {
			eq(t, c.Sandbox.Root, tree)
			eq(t, c.Delegation.MaxDepth, DefaultMaxDepth)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.yml)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if err := checkNormalized(&c.Sandbox); err != nil {
				t.Errorf("not normalized: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func eq(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

// TestParseRejects covers each validation rule with inline YAML; the bad
// fixtures cover them again through files.
func TestParseRejects(t *testing.T) {
	fixtureHome(t)
	tests := []struct {
		name, yml, field, want string
	}{
		{"relative target", "sandbox: {mounts: [{source: cache, target: x}]}", "sandbox.mounts[0].target", "must be absolute"},
		{"dotdot target", "sandbox: {mounts: [{source: cache, target: /a/../b}]}", "sandbox.mounts[0].target", "contains '..'"},
		{"target /", "sandbox: {mounts: [{source: cache, target: /}]}", "sandbox.mounts[0].target", "is /"},
		{"target /proc", "sandbox: {mounts: [{source: cache, target: /proc}]}", "sandbox.mounts[0].target", "under /proc"},
		{"target /dev/shm", "sandbox: {mounts: [{source: cache, target: /dev/shm}]}", "sandbox.mounts[0].target", "under /dev"},
		{"target /sys", "sandbox: {mounts: [{source: cache, target: /sys}]}", "sandbox.mounts[0].target", "under /sys"},
		{"/proc-like name is fine only elsewhere", "sandbox: {mounts: [{source: cache, target: /procfs}, {source: data, target: /proc/x}]}", "sandbox.mounts[1].target", "under /proc"},
		{"duplicate targets", "sandbox: {mounts: [{source: cache, target: /x}, {source: data, target: /x}]}", "sandbox.mounts[1].target", "also the target of sandbox.mounts[0]"},
		{"target equals root", "sandbox: {root: project, mounts: [{source: cache, target: " + abs(t, fixtures+"/tree/project") + "}]}", "sandbox.mounts[0].target", "is the workspace root"},
		{"missing source", "sandbox: {mounts: [{source: nope}]}", "sandbox.mounts[0].source", "does not exist"},
		{"source required", "sandbox: {mounts: [{target: /x}]}", "sandbox.mounts[0].source", "is required"},
		{"mount not a mapping", "sandbox: {mounts: [cache]}", "sandbox.mounts[0]", "must be a mapping"},
		{"unknown mount key", "sandbox: {mounts: [{source: cache, mode: ro}]}", "sandbox.mounts[0].mode", "unknown key"},
		{"strict_deny as a word", "sandbox: {strict_deny: yes}", "sandbox.strict_deny", "true or false"},
		{"strict_deny as a number", "sandbox: {strict_deny: 1}", "sandbox.strict_deny", "true or false"},
		{"memory 0", "sandbox: {limits: {memory: 0}}", "sandbox.limits.memory", "above zero"},
		{"memory negative", "sandbox: {limits: {memory: -1}}", "sandbox.limits.memory", "negative"},
		{"pids 0", "sandbox: {limits: {pids: 0}}", "sandbox.limits.pids", "above zero"},
		{"pids as string", "sandbox: {limits: {pids: many}}", "sandbox.limits.pids", "must be a whole number"},
		{"pids overflow", "sandbox: {limits: {pids: 99999999999999999999}}", "sandbox.limits.pids", ""},
		{"timeout 0", "sandbox: {limits: {timeout: 0s}}", "sandbox.limits.timeout", "above zero"},
		{"timeout negative", "sandbox: {limits: {timeout: -1m}}", "sandbox.limits.timeout", "above zero"},
		{"timeout without unit", "sandbox: {limits: {timeout: 30}}", "sandbox.limits.timeout", "has no unit"},
		{"cpus 0", "sandbox: {limits: {cpus: 0.0}}", "sandbox.limits.cpus", "above zero"},
		{"cpus infinite", "sandbox: {limits: {cpus: .inf}}", "sandbox.limits.cpus", "finite"},
		{"file_size 0", "sandbox: {limits: {file_size: 0}}", "sandbox.limits.file_size", "above zero"},
		{"output bad unit", "sandbox: {limits: {output: 1 parsec}}", "sandbox.limits.output", "unknown unit"},
		{"max_file_bytes 0", "sandbox: {mounts: [{source: cache, max_file_bytes: 0}]}", "sandbox.mounts[0].max_file_bytes", "above zero"},
		{"unknown limit", "sandbox: {limits: {disk: 1G}}", "sandbox.limits.disk", "unknown key"},
		{"allow port 0", `sandbox: {network: {allow: ["a.com:0"]}}`, "sandbox.network.allow[0]", "port"},
		{"allow port leading zero", `sandbox: {network: {allow: ["a.com:0443"]}}`, "sandbox.network.allow[0]", "port"},
		{"allow trailing colon", `sandbox: {network: {allow: ["a.com:"]}}`, "sandbox.network.allow[0]", "port"},
		{"allow inner wildcard", `sandbox: {network: {allow: ["a.*.com"]}}`, "sandbox.network.allow[0]", "first label"},
		{"allow path", `sandbox: {network: {allow: ["a.com/x"]}}`, "sandbox.network.allow[0]", "not host[:port]"},
		{"allow empty string", `sandbox: {network: {allow: [""]}}`, "sandbox.network.allow[0]", "is empty"},
		{"allow empty list", `sandbox: {network: {allow: []}}`, "sandbox.network.allow", "at least one host"},
		{"allow missing", `sandbox: {network: {}}`, "sandbox.network.allow", "at least one host"},
		{"network unknown key", `sandbox: {network: {deny: [x.com]}}`, "sandbox.network.deny", "unknown key"},
		{"network string", `sandbox: {network: "on"}`, "sandbox.network", "must be true, false"},
		{"env name", "sandbox: {env: {pass: [A-B]}}", "sandbox.env.pass[0]", "not a variable name"},
		{"env set name", "sandbox: {env: {set: {9X: y}}}", "sandbox.env.set", "not a variable name"},
		{"env set twice", "sandbox: {env: {set: {X: a, X: b}}}", "sandbox.env.set.X", "set twice"},
		{"system relative", "sandbox: {system: rootfs}", "sandbox.system", "neither host, none nor an absolute directory"},
		{"system missing", "sandbox: {system: /no/such/rootfs}", "sandbox.system", "does not exist"},
		{"system is a file", "sandbox: {system: " + abs(t, fixtures+"/tree/data/table.csv") + "}", "sandbox.system", "not a directory"},
		{"suffix without dot", "sandbox: {mounts: [{source: cache, suffixes: [txt]}]}", "sandbox.mounts[0].suffixes[0]", "not a file suffix"},
		{"duplicate zone name", "sandbox: {mounts: [{source: cache, name: z}, {source: data, name: z}]}", "sandbox.mounts[1].name", "also used"},
		{"workspace zone reserved", "sandbox: {mounts: [{source: cache, name: workspace}]}", "sandbox.mounts[0].name", "reserved"},
		{"bad zone name", "sandbox: {mounts: [{source: cache, name: ../x}]}", "sandbox.mounts[0].name", "not a valid zone name"},
		{"root missing", "sandbox: {root: nope}", "sandbox.root", "does not exist"},
		{"root under /proc", "sandbox: {root: /proc}", "sandbox.root", "under /proc"},
		{"root ~user", "sandbox: {root: ~nobody/x}", "sandbox.root", "~user"},
		{"root empty", `sandbox: {root: ""}`, "sandbox.root", "is empty"},
		{"root bool", "sandbox: {root: true}", "sandbox.root", "must be a string"},
		{"NUL in root", `sandbox: {root: "a\0b"}`, "sandbox.root", "NUL"},
		{"NUL in source", `sandbox: {mounts: [{source: "cache\0"}]}`, "sandbox.mounts[0].source", "NUL"},
		{"NUL in zone name", `sandbox: {mounts: [{source: cache, name: "a\0"}]}`, "sandbox.mounts[0].name", "NUL"},
		{"NUL in allow", `sandbox: {network: {allow: ["a.com\0"]}}`, "sandbox.network.allow[0]", "NUL"},
		{"NUL in env pass", `sandbox: {env: {pass: ["A\0"]}}`, "sandbox.env.pass[0]", "NUL"},
		{"NUL in suffix", `sandbox: {mounts: [{source: cache, suffixes: [".a\0"]}]}`, "sandbox.mounts[0].suffixes[0]", "NUL"},
		{"NUL in memory", `sandbox: {limits: {memory: "1\0"}}`, "sandbox.limits.memory", "NUL"},
		{"NUL in audit", `audit: "a\0"`, "audit", "NUL"},
		{"very long path", "sandbox: {deny: [" + strings.Repeat("a", 5000) + "]}", "sandbox.deny[0]", "longer than 4096"},
		{"bad pattern in protect", "sandbox: {protect: [src/a**]}", "sandbox.protect[0]", "whole path component"},
		{"bad class in deny", "sandbox: {deny: [\"src/[a\"]}", "sandbox.deny[0]", "not a valid pattern"},
		{"empty deny entry", `sandbox: {deny: [""]}`, "sandbox.deny[0]", "is empty"},
		{"max_depth 0", "delegation: {max_depth: 0}", "delegation.max_depth", "above zero"},
		{"max_depth huge", "delegation: {max_depth: 5000}", "delegation.max_depth", "more than 1000"},
		{"max_depth float", "delegation: {max_depth: 1.5}", "delegation.max_depth", "whole number"},
		{"audit is a directory", "audit: cache", "audit", "is a directory"},
		{"bool spelled yes", "sandbox: {readonly: yes}", "sandbox.readonly", "true or false"},
		{"top-level scalar", "hello", "", "must be a mapping"},
		{"non-string key", "sandbox: {[a]: b}", "sandbox", "not a plain name"},
		{"merge key", "base: &b {root: .}\nsandbox: {<<: *b}", "base", "unknown key"},
		{"custom tag", "sandbox: {root: !secret x}", "sandbox.root", "must be a string"},
		{"binary tag", "sandbox: {root: !!binary aGVsbG8=}", "sandbox.root", "must be a string"},
		{"second document", "sandbox: {}\n---\n{}", "yaml", "more than one YAML document"},
		{"tab indentation", "sandbox:\n\troot: x", "yaml", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parse(t, tt.yml)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", c)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("not ErrInvalidConfig: %v", err)
			}
			for _, p := range problems(err) {
				if p.Field == tt.field && strings.Contains(p.Problem, tt.want) {
					return
				}
			}
			t.Errorf("no problem on %s containing %q; got:\n%v", tt.field, tt.want, err)
		})
	}
}

// TestMountSourceNeverCreated: a missing mount source is an error, and
// validation leaves no trace of it on disk.
func TestMountSourceNeverCreated(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "cache", "pip")
	_, err := Parse([]byte("sandbox: {mounts: [{source: cache/pip, target: /c}]}"), dir, "test.yaml")
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), missing+" does not exist") {
		t.Fatalf("err = %v, want a missing-source error naming %s", err, missing)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("validation created %s (stat: %v)", filepath.Join(dir, "cache"), err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "cordon.yaml"))
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want ErrInvalidConfig and fs.ErrNotExist", err)
	}
}

// TestLoadRelativeToFile: paths in a config are relative to its folder, not
// to the process's working directory.
func TestLoadRelativeToFile(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"proj", "cache"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "cordon.yaml")
	if err := os.WriteFile(cfgPath, []byte("sandbox: {root: proj, mounts: [{source: cache}]}\naudit: audit.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	cfg, err := Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, cfg.Sandbox.Root, filepath.Join(dir, "proj"))
	eq(t, cfg.Sandbox.Mounts[0].Source, filepath.Join(dir, "cache"))
	eq(t, cfg.Audit, filepath.Join(dir, "audit.log"))
}

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{Field: "sandbox.mounts[1].target", Line: 7, Problem: "must be absolute", Fix: "write /x"}, "sandbox.mounts[1].target (line 7): must be absolute; fix: write /x"},
		{FieldError{Field: "profile", Problem: "unknown"}, "profile: unknown"},
		{FieldError{Line: 2, Problem: "bad"}, "config (line 2): bad"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			eq(t, tt.e.Error(), tt.want)
			if !errors.Is(&tt.e, ErrInvalidConfig) || errors.Is(&tt.e, ErrWidening) {
				t.Error("FieldError must match ErrInvalidConfig only")
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"4096", 4096, ""},
		{"0", 0, ""},
		{"512MiB", 512 << 20, ""},
		{"512mib", 512 << 20, ""},
		{"512m", 512 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"1 GiB", 1 << 30, ""},
		{"100MB", 100_000_000, ""},
		{"1kb", 1000, ""},
		{"1K", 1024, ""},
		{"2TiB", 2 << 40, ""},
		{"1.5GiB", 3 << 29, ""},
		{"0.1KiB", 102, ""},
		{"10B", 10, ""},
		{" 7 ", 7, ""},
		{"8EiB", 0, "unknown unit"},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"9223372036854775808", 0, "too large"},
		{"8388608TiB", 0, "too large"},
		{"", 0, "empty"},
		{"-1", 0, "negative"},
		{"-1MiB", 0, "negative"},
		{"+1", 0, "not a number"},
		{"MiB", 0, "not a number"},
		{"1.2.3", 0, "not a number"},
		{".5M", 0, "not a number"},
		{"5.M", 0, "not a number"},
		{"1e9", 0, "unknown unit"},
		{"0x10", 0, "unknown unit"},
		{"1_000", 0, "unknown unit"},
		{"12 potatoes", 0, `unknown unit "potatoes"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBytes(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("ParseBytes(%q) = %d, %v; want error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"30s", 30 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"30", 0, "no unit"},
		{"1.5", 0, "no unit"},
		{"", 0, "empty"},
		{"soon", 0, "not valid"},
		{"5 minutes", 0, "not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseDuration(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("parseDuration(%q) = %v, %v; want error with %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNormalizeAllow(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"github.com", "github.com", ""},
		{"GitHub.com:443", "github.com:443", ""},
		{"*.pypi.org", "*.pypi.org", ""},
		{"*.PyPI.org:443", "*.pypi.org:443", ""},
		{"10.0.0.1:8080", "10.0.0.1:8080", ""},
		{"[::1]", "[::1]", ""},
		{"[0:0::1]:53", "[::1]:53", ""},
		{"_srv.example.com", "_srv.example.com", ""},
		{"localhost:65535", "localhost:65535", ""},
		{"a.com:65536", "", "port"},
		{"a.com:-1", "", "port"},
		{"a.com:http", "", "port"},
		{"[::1", "", "unclosed"},
		{"[::1]x", "", "after ']'"},
		{"[fe80::1%eth0]", "", "IPv6"},
		{"*", "", "network: true"},
		{"*.", "", "network: true"},
		{"*.*", "", "first label"},
		{"**.a.com", "", "first label"},
		{"a..com", "", "label"},
		{"http://a.com", "", "not host[:port]"},
		{"user@a.com", "", "not host[:port]"},
		{strings.Repeat("a", 64) + ".com", "", "label"},
		{strings.Repeat("a.", 130) + "com", "", "253"},
		{"tcp://GitHub.com:22", "tcp://github.com:22", ""},
		{"TCP://*.Example.com:5432", "tcp://*.example.com:5432", ""},
		{"tcp://github.com", "", "needs a port, as in tcp://github.com:22"},
		{"tcp://10.0.0.1:22", "", "never read; write 10.0.0.1:22 without tcp://"},
		{"tcp://[::1]:22", "", "never read"},
		{"tcp://tcp://a.com:1", "", "tcp:// twice"},
		{"tcp://a.com:22/x", "", "not host[:port]"},
		{"tcp://", "", "not host[:port]"},
		{"udp://a.com:1", "", "not host[:port] or tcp://host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, prob := normalizeAllow(tt.in)
			if tt.err != "" {
				if !strings.Contains(prob, tt.err) {
					t.Errorf("normalizeAllow(%q) = %q, %q; want a problem with %q", tt.in, got, prob, tt.err)
				}
				return
			}
			if prob != "" || got != tt.want {
				t.Errorf("normalizeAllow(%q) = %q, %q; want %q", tt.in, got, prob, tt.want)
			}
		})
	}
}

// TestAllowCoversTCP: a tcp:// entry (bytes unread) is wider than the same
// host and port read by the guard, so a worker gets one only from a parent
// that has it.
func TestAllowCoversTCP(t *testing.T) {
	for _, tt := range []struct {
		parent, child string
		want          bool
	}{
		{"tcp://a.com:22", "tcp://a.com:22", true},
		{"tcp://a.com:22", "a.com:22", true},
		{"tcp://*.a.com:22", "tcp://x.a.com:22", true},
		{"a.com:22", "tcp://a.com:22", false},
		{"a.com", "tcp://a.com:22", false},
		{"*.a.com", "tcp://x.a.com:22", false},
		{"tcp://a.com:22", "a.com:23", false},
		{"tcp://a.com:22", "a.com", false},
	} {
		if got := allowCovers(tt.parent, tt.child); got != tt.want {
			t.Errorf("allowCovers(%q, %q) = %v; want %v", tt.parent, tt.child, got, tt.want)
		}
	}
}

// FuzzParse: Parse never panics, and any config it returns holds the
// documented invariants (absolute clean paths, no NUL, sane limits).
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*.yaml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("sandbox: {mounts: [{source: ., target: /x}, {source: ., target: /x/y}]}"))
	f.Add([]byte("sandbox: {network: {allow: ['a.b:1']}, limits: {memory: 1k}}"))
	base := filepath.Join(fixtures, "good")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, base, "fuzz.yaml")
		if err != nil {
			if cfg != nil {
				t.Fatal("config returned along with an error")
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error is not ErrInvalidConfig: %v", err)
			}
			return
		}
		if err := checkNormalized(&cfg.Sandbox); err != nil {
			t.Fatalf("invariant broken: %v\ninput: %q", err, data)
		}
		if cfg.Sandbox.Root == "" || cfg.Delegation.MaxDepth < 1 {
			t.Fatalf("bad config: %+v", cfg)
		}
		seen := map[string]bool{cfg.Sandbox.Root: true}
		for _, m := range cfg.Sandbox.Mounts {
			if seen[m.Target] || placementProblem(m.Target) != "" {
				t.Fatalf("bad target %q in %+v", m.Target, cfg.Sandbox.Mounts)
			}
			seen[m.Target] = true
		}
	})
}
