package spec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestProfiles(t *testing.T) {
	cwd := t.TempDir()
	base := Sandbox{
		Root:             cwd,
		Protect:          joinAll(cwd, DefaultProtect),
		System:           System{Kind: SystemHost},
		Env:              Env{Pass: DefaultEnvPass},
		Caches:           CacheNames,
		Toolchains:       true,
		RequireOSSandbox: true,
	}
	var runtime []Mount
	for _, d := range ExistingDirs(RuntimeDirs) {
		runtime = append(runtime, Mount{Source: d, Target: d, Readonly: true})
	}
	if len(runtime) == 0 {
		t.Fatal("no runtime directory exists on this host")
	}
	tests := []struct {
		name string
		edit func(sb *Sandbox)
	}{
		{"workspace", func(sb *Sandbox) {}},
		{"readonly", func(sb *Sandbox) { sb.Readonly = true }},
		{"network", func(sb *Sandbox) { sb.Network = Network{Enabled: true} }},
		{"strict", func(sb *Sandbox) {
			sb.System = System{Kind: SystemNone}
			sb.Caches, sb.Toolchains = nil, false
			sb.Mounts = runtime
			sb.Limits.Timeout = 30 * time.Second
			sb.NoGitIdentity = true
		}},
	}
	if got := ProfileNames(); len(got) != len(tests) {
		t.Errorf("ProfileNames() = %v", got)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eq(t, ProfileNames()[i], tt.name)
			cfg, err := Profile(tt.name, cwd)
			if err != nil {
				t.Fatal(err)
			}
			want := base.Clone()
			tt.edit(want)
			eq(t, &cfg.Sandbox, want)
			eq(t, cfg.Source, "profile:"+tt.name)
			eq(t, cfg.Delegation.MaxDepth, DefaultMaxDepth)
			if err := checkNormalized(&cfg.Sandbox); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestProfileWorkspaceIsParsedDefault: the workspace profile equals what an
// empty config file in the same folder gives.
func TestProfileWorkspaceIsParsedDefault(t *testing.T) {
	cwd := t.TempDir()
	prof, err := Profile("workspace", cwd)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(nil, cwd, "cordon.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(prof.Sandbox, parsed.Sandbox) {
		t.Errorf("profile %+v\n!= parsed %+v", prof.Sandbox, parsed.Sandbox)
	}
}

func TestProfileErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, profile, cwd, want string }{
		{"unknown", "open", t.TempDir(), `unknown profile "open"; fix: use one of: workspace, readonly, network, strict`},
		{"missing cwd", "workspace", "/no/such/dir", "does not exist"},
		{"file cwd", "workspace", file, "is not a directory"},
		{"cwd /", "workspace", "/", "is /"},
		{"cwd /proc", "readonly", "/proc", "under /proc"},
		{"strict in /usr", "strict", "/usr", "is the workspace root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Profile(tt.profile, tt.cwd)
			if err == nil {
				t.Fatalf("Profile succeeded: %+v", cfg)
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalidConfig with %q", err, tt.want)
			}
		})
	}
}

func TestProfileDefaultsToWorkingDirectory(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	cfg, err := Profile("workspace", "")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, cfg.Sandbox.Root, dir)
}

func TestLimitsJSON(t *testing.T) {
	tests := []struct {
		l    Limits
		want string
	}{
		{Limits{}, `{}`},
		{Limits{Timeout: 30 * time.Second, Memory: 512 << 20, Pids: 256, FileSize: 100 << 20, CPUs: 1.5, Output: 1 << 20},
			`{"timeout":"30s","memory":"512MiB","pids":256,"file_size":"100MiB","cpus":1.5,"output":"1MiB"}`},
		{Limits{Timeout: 90 * time.Minute, Memory: 1000}, `{"timeout":"1h30m0s","memory":"1000B"}`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got, err := json.Marshal(tt.l)
			if err != nil {
				t.Fatal(err)
			}
			eq(t, string(got), tt.want)
			var back Limits
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			eq(t, back, tt.l)
		})
	}
	// Summary embeds Limits by value, so the human form reaches reports.
	s, err := json.Marshal(Summary{Limits: Limits{Memory: 1 << 30}})
	if err != nil || !strings.Contains(string(s), `"limits":{"memory":"1GiB"}`) {
		t.Errorf("summary JSON = %s, %v", s, err)
	}
	var l Limits
	for _, bad := range []string{`{"memory":"lots"}`, `{"timeout":"30"}`, `{"pids":"x"}`} {
		if err := json.Unmarshal([]byte(bad), &l); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}
