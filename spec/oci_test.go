package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

var updateOCIGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const goldenOCIDir = "../testdata/golden/oci"

// ociGoldenHost is a fixed host, so golden files do not depend on the machine.
func ociGoldenHost() hostInfo {
	return hostInfo{
		systemDirs: func(sb *Sandbox) []string {
			if sb.System.Kind != SystemHost {
				return nil
			}
			return []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}
		},
		secrets: func(sb *Sandbox) []string {
			if sb.System.Kind != SystemHost {
				return nil
			}
			return []string{"/etc/gshadow", "/etc/shadow", "/etc/ssh/ssh_host_ed25519_key", "/etc/ssl/private"}
		},
		recursiveRO: true,
		hasSubmounts: func(string) (bool, error) {
			return false, errors.New("submounts are not consulted when rro is available")
		},
		cgroupNS: true,
		goarch:   "amd64",
		lstat:    goldenLstat,
	}
}

// goldenLstat is a fixed host tree: the workspace has a .git directory and a
// .env file; nothing else exists.
func goldenLstat(p string) (fs.FileInfo, error) {
	switch p {
	case ociWS + "/.git":
		return fakeInfo{name: ".git", mode: fs.ModeDir | 0o755}, nil
	case ociWS + "/.env":
		return fakeInfo{name: ".env", mode: 0o600}, nil
	case "/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key":
		return fakeInfo{name: filepath.Base(p), mode: 0o640}, nil
	case "/etc/ssl/private":
		return fakeInfo{name: "private", mode: fs.ModeDir | 0o700}, nil
	}
	return nil, &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
}

type fakeInfo struct {
	name string
	mode fs.FileMode
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

const (
	ociWS     = "/home/dev/proj"
	ociRootfs = "/run/cordon/golden/rootfs"
)

func ociProtect() []string {
	return []string{ociWS + "/.git/hooks", ociWS + "/.git/config", ociWS + "/.bashrc", ociWS + "/.vscode"}
}

// ociWorkspace is what the workspace profile gives for ociWS.
func ociWorkspace() *Sandbox {
	return &Sandbox{
		Root:    ociWS,
		Protect: ociProtect(),
		System:  System{Kind: SystemHost},
		Limits: Limits{Timeout: 30 * time.Second, Memory: 512 << 20, Pids: 256, FileSize: 100 << 20,
			CPUs: 1.5, Output: 1 << 20},
		Env:              Env{Pass: []string{"LANG", "TERM"}, Set: map[string]string{"CI": "1"}},
		RequireOSSandbox: true,
	}
}

func ociProc() Process {
	return Process{Args: []string{"sh", "-c", "make test"}, UID: 1000, GID: 1000}
}

func ociRun() RunOptions {
	return RunOptions{Rootfs: ociRootfs, CgroupsPath: "/cordon/golden"}
}

type ociGoldenCase struct {
	name string
	sb   func() *Sandbox
	proc Process
	ro   RunOptions
}

func ociGoldenCases() []ociGoldenCase {
	return []ociGoldenCase{
		{name: "workspace", sb: ociWorkspace, proc: ociProc(), ro: ociRun()},
		{name: "readonly", sb: func() *Sandbox {
			sb := ociWorkspace()
			sb.Readonly = true
			return sb
		}, proc: ociProc(), ro: ociRun()},
		{name: "network", sb: func() *Sandbox {
			sb := ociWorkspace()
			sb.Network = Network{Enabled: true}
			return sb
		}, proc: ociProc(), ro: ociRun()},
		{name: "strict", sb: func() *Sandbox {
			sb := ociWorkspace()
			sb.System = System{Kind: SystemNone}
			for _, d := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
				sb.Mounts = append(sb.Mounts, Mount{Source: d, Target: d, Readonly: true})
			}
			sb.Limits = Limits{Timeout: 30 * time.Second}
			return sb
		}, proc: ociProc(), ro: ociRun()},
		{name: "deny-protect", sb: func() *Sandbox {
			sb := ociWorkspace()
			sb.Deny = []string{ociWS + "/.env", ociWS + "/secrets"}
			// .vscode is missing on the host: Placeholders names it and
			// the spec still carries its read-only rebind.
			sb.Protect = append(ociProtect(), ociWS+"/.claude")
			sb.Mounts = []Mount{{Source: "/home/dev/.cache/pip", Target: "/cache/pip", Name: "cache"}}
			return sb
		}, proc: ociProc(), ro: ociRun()},
		{name: "worker", sb: func() *Sandbox {
			// What Derive gives for a worker restricted to src, read-only,
			// with the parent's cache zone read-only and lower limits.
			return &Sandbox{
				Root:     ociWS + "/src",
				Readonly: true,
				Mounts:   []Mount{{Source: "/home/dev/.cache/pip", Target: "/cache/pip", Readonly: true, Name: "cache"}},
				Deny:     []string{ociWS + "/.env"},
				Protect:  ociProtect(),
				System:   System{Kind: SystemHost},
				Limits:   Limits{Timeout: 10 * time.Second, Memory: 128 << 20, Pids: 64},
				Env:      Env{Pass: []string{"LANG"}},
				Lineage:  []string{"planner", "fmt"},
				// A parent allowed degradation; the child keeps that.
				RequireOSSandbox: false,
				Network:          Network{},
			}
		}, proc: Process{Args: []string{"gofmt", "-l", "."}, Cwd: ociWS + "/src", UID: 1000, GID: 1000},
			ro: ociRun()},
		{name: "rootless", sb: ociWorkspace, proc: ociProc(),
			ro: RunOptions{Rootfs: ociRootfs, Rootless: true, HostUID: 1000, HostGID: 1000}},
		{name: "rootfs", sb: func() *Sandbox {
			sb := ociWorkspace()
			sb.System = System{Kind: SystemRootfs, Rootfs: "/srv/images/debian"}
			return sb
		}, proc: ociProc(), ro: ociRun()},
	}
}

func setOCIGoldenEnv(t *testing.T) {
	t.Helper()
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TERM", "xterm-256color")
}

func marshalOCI(t *testing.T, s *specs.Spec) []byte {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "\t")
	if err != nil {
		t.Fatalf("marshal spec: %v", err)
	}
	return append(b, '\n')
}

func TestOCIGolden(t *testing.T) {
	setOCIGoldenEnv(t)
	for _, tc := range ociGoldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, err := toOCI(tc.sb(), tc.proc, tc.ro, ociGoldenHost())
			if err != nil {
				t.Fatalf("toOCI: %v", err)
			}
			got := marshalOCI(t, s)
			path := filepath.Join(goldenOCIDir, tc.name+".json")
			if *updateOCIGolden {
				if err := os.MkdirAll(goldenOCIDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (rewrite with -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the generated spec (rewrite with -update if intended):\n%s", path, ociFirstDiff(want, got))
			}
		})
	}
}

func ociFirstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  golden: %s\n  got:    %s", i+1, w, g)
		}
	}
	return "(no line differs)"
}

// TestOCIGoldenDeterministic guards the golden files against map order or
// host state leaking into the output.
func TestOCIGoldenDeterministic(t *testing.T) {
	setOCIGoldenEnv(t)
	for _, tc := range ociGoldenCases() {
		a, err := toOCI(tc.sb(), tc.proc, tc.ro, ociGoldenHost())
		if err != nil {
			t.Fatal(err)
		}
		b, err := toOCI(tc.sb(), tc.proc, tc.ro, ociGoldenHost())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(marshalOCI(t, a), marshalOCI(t, b)) {
			t.Errorf("%s: two translations differ", tc.name)
		}
	}
}

func newOCISpec() *specs.Spec { return &specs.Spec{Version: specs.Version} }

func TestOCICompose(t *testing.T) {
	var order []string
	step := func(name string, err error) Opt {
		return func(*specs.Spec) error {
			order = append(order, name)
			return err
		}
	}
	boom := errors.New("boom")
	tests := []struct {
		name      string
		opts      []Opt
		wantOrder []string
		wantErr   error
	}{
		{"in order", []Opt{step("a", nil), step("b", nil)}, []string{"a", "b"}, nil},
		{"nil skipped", []Opt{nil, step("a", nil), nil}, []string{"a"}, nil},
		{"stops at error", []Opt{step("a", boom), step("b", nil)}, []string{"a"}, boom},
		{"nested", []Opt{Compose(step("a", nil), step("b", nil)), step("c", nil)}, []string{"a", "b", "c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			order = nil
			err := Compose(tt.opts...)(newOCISpec())
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(order, tt.wantOrder) {
				t.Errorf("order = %v, want %v", order, tt.wantOrder)
			}
		})
	}
}

func TestOCIWithRoot(t *testing.T) {
	tests := []struct {
		path    string
		wantErr bool
	}{
		{"/run/x/rootfs", false},
		{"rootfs", true},
		{"", true},
		{"/run/../x", true},
		{"/run/x/", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			s := newOCISpec()
			err := WithRoot(tt.path, true)(s)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr && s.Root != nil {
				t.Errorf("root set despite the error: %+v", s.Root)
			}
			if !tt.wantErr && (s.Root.Path != tt.path || !s.Root.Readonly) {
				t.Errorf("root = %+v", s.Root)
			}
		})
	}
}

func ociNamespaces(s *specs.Spec) []specs.LinuxNamespaceType {
	var out []specs.LinuxNamespaceType
	if s.Linux == nil {
		return nil
	}
	for _, n := range s.Linux.Namespaces {
		out = append(out, n.Type)
	}
	return out
}

func TestOCIWithNamespaces(t *testing.T) {
	tests := []struct {
		name string
		opts []Opt
		want []specs.LinuxNamespaceType
	}{
		{"adds", []Opt{WithNamespaces(specs.PIDNamespace, specs.MountNamespace)},
			[]specs.LinuxNamespaceType{specs.PIDNamespace, specs.MountNamespace}},
		{"no duplicates", []Opt{WithNamespaces(specs.PIDNamespace), WithNamespaces(specs.PIDNamespace, specs.NetworkNamespace)},
			[]specs.LinuxNamespaceType{specs.PIDNamespace, specs.NetworkNamespace}},
		{"without", []Opt{WithNamespaces(specs.PIDNamespace, specs.NetworkNamespace), WithoutNamespace(specs.NetworkNamespace)},
			[]specs.LinuxNamespaceType{specs.PIDNamespace}},
		{"user namespace once", []Opt{WithUserNamespace(0, 1000, 0, 1000), WithUserNamespace(1000, 1000, 1000, 1000)},
			[]specs.LinuxNamespaceType{specs.UserNamespace}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			if err := Compose(tt.opts...)(s); err != nil {
				t.Fatal(err)
			}
			if got := ociNamespaces(s); !slices.Equal(got, tt.want) {
				t.Errorf("namespaces = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOCIWithUserNamespace(t *testing.T) {
	s := newOCISpec()
	if err := WithUserNamespace(1000, 4242, 100, 4343)(s); err != nil {
		t.Fatal(err)
	}
	wantU := []specs.LinuxIDMapping{{ContainerID: 1000, HostID: 4242, Size: 1}}
	wantG := []specs.LinuxIDMapping{{ContainerID: 100, HostID: 4343, Size: 1}}
	if !slices.Equal(s.Linux.UIDMappings, wantU) || !slices.Equal(s.Linux.GIDMappings, wantG) {
		t.Errorf("mappings = %v / %v, want %v / %v", s.Linux.UIDMappings, s.Linux.GIDMappings, wantU, wantG)
	}
}

func ociDests(ms []specs.Mount) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Destination)
	}
	return out
}

func TestOCIWithMounts(t *testing.T) {
	bind := func(src, dst string) specs.Mount {
		return specs.Mount{Destination: dst, Type: "bind", Source: src, Options: []string{"rbind"}}
	}
	tests := []struct {
		name    string
		mounts  []specs.Mount
		want    []string
		wantErr string
	}{
		{"parents first", []specs.Mount{bind("/a", "/w/a/b"), bind("/w", "/w"), {Destination: "/w/a", Type: "tmpfs", Source: "tmpfs"}},
			[]string{"/w", "/w/a", "/w/a/b"}, ""},
		{"stable among equals", []specs.Mount{bind("/y", "/y"), bind("/x", "/x"), bind("/z", "/z")},
			[]string{"/y", "/x", "/z"}, ""},
		{"bind without rbind", []specs.Mount{{Destination: "/x", Type: "bind", Source: "/x"}}, nil, "rbind"},
		{"relative source", []specs.Mount{{Destination: "/x", Type: "bind", Source: "x", Options: []string{"rbind"}}}, nil, "source"},
		{"relative destination", []specs.Mount{{Destination: "x", Type: "tmpfs", Source: "tmpfs"}}, nil, "destination"},
		{"bind option on a typeless mount", []specs.Mount{{Destination: "/x", Source: "rel", Options: []string{"bind"}}}, nil, "source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			err := WithMounts(tt.mounts...)(s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
				}
				if len(s.Mounts) != 0 {
					t.Errorf("mounts added despite the error: %v", ociDests(s.Mounts))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ociDests(s.Mounts); !slices.Equal(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOCIWithMasksAndReadonlyPaths(t *testing.T) {
	tests := []struct {
		name    string
		opt     func(...string) Opt
		get     func(*specs.Linux) []string
		paths   []string
		want    []string
		wantErr bool
	}{
		{"masks dedupe", WithMasks, func(l *specs.Linux) []string { return l.MaskedPaths },
			[]string{"/a", "/b", "/a"}, []string{"/a", "/b"}, false},
		{"masks relative", WithMasks, func(l *specs.Linux) []string { return l.MaskedPaths },
			[]string{"a"}, nil, true},
		{"readonly dedupe", WithReadonlyPaths, func(l *specs.Linux) []string { return l.ReadonlyPaths },
			[]string{"/a", "/a", "/c"}, []string{"/a", "/c"}, false},
		{"readonly unclean", WithReadonlyPaths, func(l *specs.Linux) []string { return l.ReadonlyPaths },
			[]string{"/a/../b"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			err := tt.opt(tt.paths...)(s)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got := tt.get(ensureLinux(s)); !slices.Equal(got, tt.want) {
				t.Errorf("paths = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOCIWithDefaultDevices(t *testing.T) {
	s := newOCISpec()
	ensureLinux(s).Devices = []specs.LinuxDevice{{Path: "/dev/null", Type: "c", Major: 1, Minor: 3}}
	if err := WithDefaultDevices()(s); err != nil {
		t.Fatal(err)
	}
	if len(s.Linux.Devices) != 0 {
		t.Errorf("devices = %v, want none (libcontainer adds its six defaults)", s.Linux.Devices)
	}
	want := []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}
	if !slices.EqualFunc(s.Linux.Resources.Devices, want, func(a, b specs.LinuxDeviceCgroup) bool {
		return a.Allow == b.Allow && a.Access == b.Access && a.Type == b.Type && a.Major == nil && a.Minor == nil
	}) {
		t.Errorf("device rules = %+v, want deny-all first", s.Linux.Resources.Devices)
	}
}

func ociRlimit(s *specs.Spec, typ string) (specs.POSIXRlimit, bool) {
	for _, r := range s.Process.Rlimits {
		if r.Type == typ {
			return r, true
		}
	}
	return specs.POSIXRlimit{}, false
}

func TestOCIWithLimits(t *testing.T) {
	tests := []struct {
		name  string
		l     Limits
		check func(t *testing.T, s *specs.Spec)
	}{
		{"memory and swap equal", Limits{Memory: 256 << 20}, func(t *testing.T, s *specs.Spec) {
			m := s.Linux.Resources.Memory
			if m == nil || *m.Limit != 256<<20 || *m.Swap != 256<<20 {
				t.Errorf("memory = %+v, want limit = swap = 256MiB", m)
			}
		}},
		{"pids", Limits{Pids: 64}, func(t *testing.T, s *specs.Spec) {
			if p := s.Linux.Resources.Pids; p == nil || *p.Limit != 64 {
				t.Errorf("pids = %+v", p)
			}
		}},
		{"cpus", Limits{CPUs: 1.5}, func(t *testing.T, s *specs.Spec) {
			c := s.Linux.Resources.CPU
			if c == nil || *c.Quota != 150000 || *c.Period != 100000 {
				t.Errorf("cpu = %+v, want 150000/100000", c)
			}
		}},
		{"unset limits leave resources empty", Limits{Timeout: time.Second, Output: 10}, func(t *testing.T, s *specs.Spec) {
			r := s.Linux.Resources
			if r.Memory != nil || r.Pids != nil || r.CPU != nil {
				t.Errorf("resources = %+v, want none", r)
			}
			if _, ok := ociRlimit(s, "RLIMIT_FSIZE"); ok {
				t.Error("RLIMIT_FSIZE set without file_size")
			}
		}},
		{"rlimits", Limits{FileSize: 1 << 20}, func(t *testing.T, s *specs.Spec) {
			want := []specs.POSIXRlimit{
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
				{Type: "RLIMIT_FSIZE", Hard: 1 << 20, Soft: 1 << 20},
				{Type: "RLIMIT_NOFILE", Hard: nofileHard, Soft: nofileSoft},
			}
			if !slices.Equal(s.Process.Rlimits, want) {
				t.Errorf("rlimits = %+v, want %+v", s.Process.Rlimits, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			if err := WithLimits(tt.l)(s); err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
	t.Run("cpu quota too small", func(t *testing.T) {
		s := newOCISpec()
		err := WithLimits(Limits{CPUs: 0.001})(s)
		if !errors.Is(err, ErrUnenforceable) {
			t.Fatalf("err = %v, want ErrUnenforceable", err)
		}
		if s.Linux != nil && s.Linux.Resources != nil && s.Linux.Resources.CPU != nil {
			t.Error("cpu quota set despite the error")
		}
	})
	t.Run("later limits replace earlier rlimits", func(t *testing.T) {
		s := newOCISpec()
		if err := Compose(WithLimits(Limits{FileSize: 10}), WithLimits(Limits{FileSize: 5}))(s); err != nil {
			t.Fatal(err)
		}
		if r, _ := ociRlimit(s, "RLIMIT_FSIZE"); r.Hard != 5 || len(s.Process.Rlimits) != 3 {
			t.Errorf("rlimits = %+v", s.Process.Rlimits)
		}
	})
}

func TestOCIWithProcess(t *testing.T) {
	tests := []struct {
		name    string
		p       Process
		wantErr string
	}{
		{"ok", Process{Args: []string{"true"}, Cwd: "/w", UID: 7, GID: 8, AdditionalGids: []uint32{9}, Terminal: true}, ""},
		{"no args", Process{Cwd: "/"}, "args are empty"},
		{"relative cwd", Process{Args: []string{"true"}, Cwd: "w"}, "cwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			err := WithProcess(tt.p)(s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if s.Process != nil {
					t.Error("process set despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := s.Process
			if !p.NoNewPrivileges {
				t.Error("no_new_privs is off")
			}
			if p.User.UID != 7 || p.User.GID != 8 || !slices.Equal(p.User.AdditionalGids, []uint32{9}) ||
				!p.Terminal || p.Cwd != "/w" || !slices.Equal(p.Args, []string{"true"}) {
				t.Errorf("process = %+v", p)
			}
		})
	}
}

// TestOCINoCapabilities is the security property "the sandboxed process
// has no capabilities, even as uid 0": the capabilities object is present
// (libcontainer keeps every capability when it is missing) and every set
// is empty, also after a JSON round trip.
func TestOCINoCapabilities(t *testing.T) {
	for _, uid := range []uint32{0, 1000} {
		t.Run(fmt.Sprint("uid ", uid), func(t *testing.T) {
			s, err := toOCI(ociWorkspace(), Process{Args: []string{"id"}, UID: uid, GID: uid}, ociRun(), ociGoldenHost())
			if err != nil {
				t.Fatal(err)
			}
			var back specs.Spec
			if err := json.Unmarshal(marshalOCI(t, s), &back); err != nil {
				t.Fatal(err)
			}
			c := back.Process.Capabilities
			if c == nil {
				t.Fatal("capabilities object is missing: libcontainer would keep every capability")
			}
			if n := len(c.Bounding) + len(c.Effective) + len(c.Permitted) + len(c.Inheritable) + len(c.Ambient); n != 0 {
				t.Errorf("capabilities = %+v, want all empty", c)
			}
			if !back.Process.NoNewPrivileges {
				t.Error("no_new_privs is off")
			}
			if back.Process.ApparmorProfile != "" || back.Process.OOMScoreAdj != nil {
				t.Errorf("apparmor %q / oomScoreAdj %v, want both unset", back.Process.ApparmorProfile, back.Process.OOMScoreAdj)
			}
		})
	}
}

func TestOCIWithCapabilities(t *testing.T) {
	s := newOCISpec()
	if err := WithCapabilities("CAP_KILL")(s); err != nil {
		t.Fatal(err)
	}
	c := s.Process.Capabilities
	if !slices.Equal(c.Bounding, []string{"CAP_KILL"}) || !slices.Equal(c.Effective, []string{"CAP_KILL"}) ||
		!slices.Equal(c.Permitted, []string{"CAP_KILL"}) || len(c.Inheritable) != 0 || len(c.Ambient) != 0 {
		t.Errorf("capabilities = %+v", c)
	}
}

func TestOCISmallOptions(t *testing.T) {
	prof, err := DefaultSeccomp("amd64")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opt   Opt
		check func(*specs.Spec) bool
	}{
		{"hostname", WithHostname("box"), func(s *specs.Spec) bool { return s.Hostname == "box" }},
		{"cgroups path", WithCgroupsPath("/cordon/x"), func(s *specs.Spec) bool { return s.Linux.CgroupsPath == "/cordon/x" }},
		{"propagation", WithRootfsPropagation("rprivate"), func(s *specs.Spec) bool { return s.Linux.RootfsPropagation == "rprivate" }},
		{"seccomp", WithSeccomp(prof), func(s *specs.Spec) bool { return s.Linux.Seccomp == prof }},
		{"seccomp removed", Compose(WithSeccomp(prof), WithSeccomp(nil)), func(s *specs.Spec) bool { return s.Linux.Seccomp == nil }},
		{"annotations merge", Compose(WithAnnotations(map[string]string{"a": "1", "b": "1"}), WithAnnotations(map[string]string{"b": "2"})),
			func(s *specs.Spec) bool { return s.Annotations["a"] == "1" && s.Annotations["b"] == "2" }},
		{"no annotations", WithAnnotations(nil), func(s *specs.Spec) bool { return s.Annotations == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newOCISpec()
			if err := tt.opt(s); err != nil {
				t.Fatal(err)
			}
			if !tt.check(s) {
				t.Errorf("option had no effect: %+v / %+v", s, s.Linux)
			}
		})
	}
}

func mustOCI(t *testing.T, sb *Sandbox, proc Process, ro RunOptions, h hostInfo) *specs.Spec {
	t.Helper()
	s, err := toOCI(sb, proc, ro, h)
	if err != nil {
		t.Fatalf("toOCI: %v", err)
	}
	return s
}

func ociMountAt(s *specs.Spec, dst string) (specs.Mount, bool) {
	for _, m := range s.Mounts {
		if m.Destination == dst {
			return m, true
		}
	}
	return specs.Mount{}, false
}

func TestOCINamespaces(t *testing.T) {
	base := []specs.LinuxNamespaceType{specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace}
	tests := []struct {
		name     string
		network  Network
		cgroupNS bool
		rootless bool
		want     []specs.LinuxNamespaceType
	}{
		{"network off", Network{}, true, false, append(slices.Clone(base), specs.NetworkNamespace, specs.CgroupNamespace)},
		{"network on", Network{Enabled: true}, true, false, append(slices.Clone(base), specs.CgroupNamespace)},
		{"no cgroup namespace", Network{}, false, false, append(slices.Clone(base), specs.NetworkNamespace)},
		{"rootless keeps the network namespace", Network{}, true, true,
			append(slices.Clone(base), specs.NetworkNamespace, specs.CgroupNamespace, specs.UserNamespace)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := ociWorkspace()
			sb.Network = tt.network
			h := ociGoldenHost()
			h.cgroupNS = tt.cgroupNS
			ro := ociRun()
			ro.Rootless = tt.rootless
			s := mustOCI(t, sb, ociProc(), ro, h)
			if got := ociNamespaces(s); !slices.Equal(got, tt.want) {
				t.Errorf("namespaces = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOCINetworkAllowListNeverWidens is the security property "an allow
// list the spec cannot express is never widened": whatever
// require_os_sandbox says (refusing is the backend's decision, in
// runner.Enforce), the spec keeps the network namespace (no network) and
// says the allow list is not enforced.
func TestOCINetworkAllowListNeverWidens(t *testing.T) {
	for _, require := range []bool{true, false} {
		sb := ociWorkspace()
		sb.RequireOSSandbox = require
		sb.Network = Network{Enabled: true, Allow: []string{"github.com:443"}}
		s := mustOCI(t, sb, ociProc(), ociRun(), ociGoldenHost())
		if !slices.Contains(ociNamespaces(s), specs.NetworkNamespace) {
			t.Error("an allow list dropped the network namespace: that would be wider than the policy")
		}
		if got := s.Annotations[AnnotationUnenforced]; got != `["network.allow"]` {
			t.Errorf("unenforced annotation = %q", got)
		}
		if got := s.Annotations[AnnotationNetwork]; got != "allow: github.com:443" {
			t.Errorf("network annotation = %q", got)
		}
	}
	// What the backend dropped is recorded with it, once.
	sb := ociWorkspace()
	sb.Network = Network{Enabled: true, Allow: []string{"x.org"}}
	ro := ociRun()
	ro.Unenforced = []string{"limits", "network.allow"}
	s := mustOCI(t, sb, ociProc(), ro, ociGoldenHost())
	if got := s.Annotations[AnnotationUnenforced]; got != `["limits","network.allow"]` {
		t.Errorf("unenforced annotation = %q", got)
	}
}

func TestOCIReportsEveryProblem(t *testing.T) {
	sb := ociWorkspace()
	sb.Mounts = []Mount{{Source: "/src", Target: "/proc/x"}}
	ro := ociRun()
	ro.Rootless = true
	ro.Rootfs = "relative"
	proc := ociProc()
	proc.AdditionalGids = []uint32{27}
	_, err := toOCI(sb, proc, ro, ociGoldenHost())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"/proc/x", "rootfs", "supplementary groups"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q: %v", want, err)
		}
	}
}

func TestOCIMounts(t *testing.T) {
	tests := []struct {
		name     string
		sb       func() *Sandbox
		rootless bool
		check    func(t *testing.T, s *specs.Spec)
	}{
		{"parents before children", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			for i, m := range s.Mounts {
				for _, later := range s.Mounts[i+1:] {
					if within(m.Destination, later.Destination) && m.Destination != later.Destination {
						t.Errorf("%s is mounted before its parent %s", m.Destination, later.Destination)
					}
				}
			}
		}},
		{"every bind is rbind with an absolute source", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			for _, m := range s.Mounts {
				if m.Type != "bind" {
					continue
				}
				if !filepath.IsAbs(m.Source) || !slices.Contains(m.Options, "rbind") ||
					!slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "nodev") {
					t.Errorf("bind %+v", m)
				}
			}
		}},
		{"system dirs recursive read-only", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			for _, d := range []string{"/usr", "/etc", "/lib"} {
				m, ok := ociMountAt(s, d)
				if !ok || !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "rro") {
					t.Errorf("%s: %+v", d, m)
				}
			}
		}},
		{"workspace read-write", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			m, _ := ociMountAt(s, ociWS)
			if slices.Contains(m.Options, "ro") || m.Source != ociWS {
				t.Errorf("workspace %+v", m)
			}
		}},
		{"readonly workspace", func() *Sandbox { sb := ociWorkspace(); sb.Readonly = true; return sb }, false,
			func(t *testing.T, s *specs.Spec) {
				m, _ := ociMountAt(s, ociWS)
				if !slices.Contains(m.Options, "rro") {
					t.Errorf("workspace %+v", m)
				}
			}},
		{"private tmp", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			m, ok := ociMountAt(s, "/tmp")
			if !ok || m.Type != "tmpfs" || !slices.Contains(m.Options, "mode=1777") {
				t.Errorf("/tmp %+v", m)
			}
		}},
		{"declared /tmp replaces the tmpfs", func() *Sandbox {
			sb := ociWorkspace()
			sb.Mounts = []Mount{{Source: "/var/tmp/x", Target: "/tmp"}}
			return sb
		}, false, func(t *testing.T, s *specs.Spec) {
			var n int
			for _, m := range s.Mounts {
				if m.Destination == "/tmp" {
					n++
					if m.Type != "bind" {
						t.Errorf("/tmp is %s", m.Type)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d mounts at /tmp", n)
			}
		}},
		{"declared system dir replaces the host one", func() *Sandbox {
			sb := ociWorkspace()
			sb.Mounts = []Mount{{Source: "/opt/etc", Target: "/etc", Readonly: true}}
			return sb
		}, false, func(t *testing.T, s *specs.Spec) {
			m, _ := ociMountAt(s, "/etc")
			if m.Source != "/opt/etc" {
				t.Errorf("/etc from %s", m.Source)
			}
		}},
		{"no /sys", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			for _, m := range s.Mounts {
				if within(m.Destination, "/sys") {
					t.Errorf("mounts %s", m.Destination)
				}
			}
		}},
		{"devpts gid 5 as root", ociWorkspace, false, func(t *testing.T, s *specs.Spec) {
			m, _ := ociMountAt(s, "/dev/pts")
			if !slices.Contains(m.Options, "gid=5") {
				t.Errorf("devpts %v", m.Options)
			}
		}},
		{"devpts without gid rootless", ociWorkspace, true, func(t *testing.T, s *specs.Spec) {
			m, _ := ociMountAt(s, "/dev/pts")
			for _, o := range m.Options {
				if strings.HasPrefix(o, "gid=") || strings.HasPrefix(o, "uid=") {
					t.Errorf("devpts %v", m.Options)
				}
			}
		}},
		{"pure function worker", func() *Sandbox {
			return &Sandbox{System: System{Kind: SystemHost}, RequireOSSandbox: true}
		}, false, func(t *testing.T, s *specs.Spec) {
			if s.Process.Cwd != "/" {
				t.Errorf("cwd %q", s.Process.Cwd)
			}
			for _, m := range s.Mounts {
				if m.Type == "bind" && !slices.Contains(m.Options, "ro") {
					t.Errorf("writable bind %s in a pure function", m.Destination)
				}
			}
		}},
		{"rootfs is the root", func() *Sandbox {
			sb := ociWorkspace()
			sb.System = System{Kind: SystemRootfs, Rootfs: "/srv/img"}
			return sb
		}, false, func(t *testing.T, s *specs.Spec) {
			if s.Root.Path != "/srv/img" || !s.Root.Readonly {
				t.Errorf("root %+v", s.Root)
			}
			if _, ok := ociMountAt(s, "/usr"); ok {
				t.Error("host /usr mounted with system: rootfs")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := ociRun()
			ro.Rootless = tt.rootless
			tt.check(t, mustOCI(t, tt.sb(), ociProc(), ro, ociGoldenHost()))
		})
	}
}

// TestOCIProtectForcesMountsBelowReadOnly is the security property "nothing
// below a protect path is writable": a rw mount inside one becomes ro,
// because libcontainer's rebind of a protect path is not recursive.
func TestOCIProtectForcesMountsBelowReadOnly(t *testing.T) {
	sb := ociWorkspace()
	sb.Mounts = []Mount{{Source: "/var/hooks", Target: ociWS + "/.git/hooks/shared"}}
	s := mustOCI(t, sb, ociProc(), ociRun(), ociGoldenHost())
	m, ok := ociMountAt(s, ociWS+"/.git/hooks/shared")
	if !ok || !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "rro") {
		t.Errorf("mount below a protect path: %+v", m)
	}
	if !slices.Contains(s.Linux.ReadonlyPaths, ociWS+"/.git/hooks") {
		t.Errorf("readonlyPaths = %v", s.Linux.ReadonlyPaths)
	}
}

func TestOCIMasksAndReadonlyPaths(t *testing.T) {
	sb := ociWorkspace()
	sb.Deny = []string{ociWS + "/.env", ociWS + "/secrets"}
	s := mustOCI(t, sb, ociProc(), ociRun(), ociGoldenHost())
	// A denied file is covered by /dev/null with nodev (every open fails),
	// not masked by a plain /dev/null that would accept writes.
	if m, ok := ociMountAt(s, ociWS+"/.env"); !ok || m.Source != "/dev/null" || !slices.Contains(m.Options, "nodev") || !slices.Contains(m.Options, "ro") {
		t.Errorf("denied file mount: %+v (found %v)", m, ok)
	}
	if slices.Contains(s.Linux.MaskedPaths, ociWS+"/.env") {
		t.Errorf("denied file is also masked: %v", s.Linux.MaskedPaths)
	}
	// So is a host secret file (issue 9, item 6): libcontainer's mask
	// would accept `echo x > /etc/shadow`.
	for _, f := range []string{"/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key"} {
		if m, ok := ociMountAt(s, f); !ok || m.Source != "/dev/null" || !slices.Contains(m.Options, "nodev") || !slices.Contains(m.Options, "ro") {
			t.Errorf("host secret %s: mount %+v (found %v)", f, m, ok)
		}
		if slices.Contains(s.Linux.MaskedPaths, f) {
			t.Errorf("host secret %s is left to libcontainer's plain mask", f)
		}
	}
	for _, want := range append(append(slices.Clone(dockerMaskedPaths), "/etc/ssl/private"), ociWS+"/secrets") {
		if !slices.Contains(s.Linux.MaskedPaths, want) {
			t.Errorf("maskedPaths lacks %s", want)
		}
	}
	for _, want := range append(slices.Clone(dockerReadonlyPaths), ociProtect()...) {
		if !slices.Contains(s.Linux.ReadonlyPaths, want) {
			t.Errorf("readonlyPaths lacks %s", want)
		}
	}
	if s.Linux.RootfsPropagation != "rprivate" {
		t.Errorf("rootfsPropagation = %q", s.Linux.RootfsPropagation)
	}
}

func TestOCIMountTargetsRefused(t *testing.T) {
	for _, target := range []string{"/", "/proc", "/proc/sys", "/dev", "/dev/shm", "/sys/fs"} {
		t.Run(target, func(t *testing.T) {
			sb := ociWorkspace()
			sb.Mounts = []Mount{{Source: "/srv/x", Target: target}}
			s, err := toOCI(sb, ociProc(), ociRun(), ociGoldenHost())
			if !errors.Is(err, ErrUnenforceable) || s != nil {
				t.Fatalf("spec %v, err %v; want no spec and ErrUnenforceable", s != nil, err)
			}
		})
	}
}

// TestOCIOldKernelSubmounts is the security property "a read-only mount is
// read-only all the way down": without recursive read-only binds, a
// read-only source with submounts is refused, and one without keeps "ro".
func TestOCIOldKernelSubmounts(t *testing.T) {
	h := ociGoldenHost()
	h.recursiveRO = false
	h.hasSubmounts = func(p string) (bool, error) { return p == "/usr", nil }
	s, err := toOCI(ociWorkspace(), ociProc(), ociRun(), h)
	if !errors.Is(err, ErrUnenforceable) || s != nil {
		t.Fatalf("err = %v, spec %v; want ErrUnenforceable and no spec", err, s != nil)
	}
	if !strings.Contains(err.Error(), "/usr") || !strings.Contains(err.Error(), "5.12") {
		t.Errorf("message %q", err)
	}

	h.hasSubmounts = func(string) (bool, error) { return false, nil }
	s = mustOCI(t, ociWorkspace(), ociProc(), ociRun(), h)
	m, _ := ociMountAt(s, "/usr")
	if !slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "rro") {
		t.Errorf("/usr options %v, want ro without rro", m.Options)
	}

	h.hasSubmounts = func(string) (bool, error) { return false, errors.New("no mountinfo") }
	if _, err := toOCI(ociWorkspace(), ociProc(), ociRun(), h); err == nil {
		t.Error("an unreadable mount table was taken as 'no submounts'")
	}
}

// TestOCIHostFromRunOptions: the facts the runner passes in decide the
// translation. No Host means a modern kernel ("rro", cgroup namespace); an
// old kernel whose mount table is unknown refuses read-only mounts rather
// than guess; a Submounts probe is asked only there.
func TestOCIHostFromRunOptions(t *testing.T) {
	s, err := ToOCI(ociWorkspace(), ociProc(), ociRun())
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := ociMountAt(s, "/usr"); len(SystemDirs(ociWorkspace())) > 0 && !slices.Contains(m.Options, "rro") {
		t.Errorf("no Host: /usr options %v, want rro", m.Options)
	}
	if !slices.Contains(ociNamespaces(s), specs.CgroupNamespace) {
		t.Error("no Host: no cgroup namespace")
	}
	ro := ociRun()
	ro.Host = &Host{}
	if _, err := ToOCI(ociWorkspace(), ociProc(), ro); err == nil {
		t.Error("an old kernel with an unknown mount table made read-only mounts anyway")
	}
	asked := 0
	ro.Host = &Host{Submounts: func(string) (bool, error) { asked++; return false, nil }}
	s, err = ToOCI(ociWorkspace(), ociProc(), ro)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ociNamespaces(s), specs.CgroupNamespace) {
		t.Error("a kernel without cgroup namespaces got one")
	}
	if len(SystemDirs(ociWorkspace())) > 0 && asked == 0 {
		t.Error("the Submounts probe was never asked on an old kernel")
	}
}

func TestOCIProcess(t *testing.T) {
	t.Setenv("CORDON_OCI_TEST_PASS", "passed")
	tests := []struct {
		name     string
		sb       func() *Sandbox
		proc     Process
		rootless bool
		check    func(t *testing.T, s *specs.Spec)
		wantErr  error
	}{
		{"cwd defaults to the root", ociWorkspace, Process{Args: []string{"pwd"}}, false, func(t *testing.T, s *specs.Spec) {
			if s.Process.Cwd != ociWS {
				t.Errorf("cwd %q", s.Process.Cwd)
			}
		}, nil},
		{"env from the sandbox", func() *Sandbox {
			sb := ociWorkspace()
			sb.Env = Env{Pass: []string{"CORDON_OCI_TEST_PASS", "CORDON_OCI_TEST_UNSET"}, Set: map[string]string{"A": "b"}}
			return sb
		}, Process{Args: []string{"env"}}, false, func(t *testing.T, s *specs.Spec) {
			env := s.Process.Env
			for _, want := range []string{"CORDON_OCI_TEST_PASS=passed", "A=b", "PATH=" + DefaultPath} {
				if !slices.Contains(env, want) {
					t.Errorf("env %v lacks %s", env, want)
				}
			}
			for _, kv := range env {
				if strings.HasPrefix(kv, "CORDON_OCI_TEST_UNSET=") {
					t.Errorf("unset variable passed: %s", kv)
				}
			}
		}, nil},
		{"explicit env gets a PATH", ociWorkspace, Process{Args: []string{"env"}, Env: []string{"X=1"}}, false,
			func(t *testing.T, s *specs.Spec) {
				if !slices.Equal(s.Process.Env, []string{"X=1", "PATH=" + DefaultPath}) {
					t.Errorf("env %v", s.Process.Env)
				}
			}, nil},
		{"explicit PATH kept", ociWorkspace, Process{Args: []string{"env"}, Env: []string{"PATH=/bin"}}, false,
			func(t *testing.T, s *specs.Spec) {
				if !slices.Equal(s.Process.Env, []string{"PATH=/bin"}) {
					t.Errorf("env %v", s.Process.Env)
				}
			}, nil},
		{"caller ids inside", ociWorkspace, Process{Args: []string{"id"}, UID: 1234, GID: 99, AdditionalGids: []uint32{4}}, false,
			func(t *testing.T, s *specs.Spec) {
				u := s.Process.User
				if u.UID != 1234 || u.GID != 99 || !slices.Equal(u.AdditionalGids, []uint32{4}) {
					t.Errorf("user %+v", u)
				}
			}, nil},
		{"rootless maps the caller to uid 0", ociWorkspace, Process{Args: []string{"id"}, UID: 1234, GID: 99}, true,
			func(t *testing.T, s *specs.Spec) {
				if got := s.Linux.UIDMappings; len(got) != 1 || got[0] != (specs.LinuxIDMapping{ContainerID: 0, HostID: 1000, Size: 1}) {
					t.Errorf("uid map %v", got)
				}
				if got := s.Linux.GIDMappings; len(got) != 1 || got[0] != (specs.LinuxIDMapping{ContainerID: 0, HostID: 1001, Size: 1}) {
					t.Errorf("gid map %v", got)
				}
				if u := s.Process.User; u.UID != 0 || u.GID != 0 {
					t.Errorf("user %+v, want 0:0 of the user namespace", u)
				}
			}, nil},
		{"rootless refuses supplementary groups", ociWorkspace, Process{Args: []string{"id"}, AdditionalGids: []uint32{27}}, true,
			nil, ErrUnenforceable},
		{"no args", ociWorkspace, Process{}, false, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := ociRun()
			if tt.rootless {
				ro = RunOptions{Rootfs: ociRootfs, Rootless: true, HostUID: 1000, HostGID: 1001}
			}
			s, err := toOCI(tt.sb(), tt.proc, ro, ociGoldenHost())
			if tt.check == nil {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) || s != nil {
					t.Fatalf("err = %v, spec %v; want an error (%v) and no spec", err, s != nil, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, s)
		})
	}
}

func TestOCIAnnotations(t *testing.T) {
	sb := ociWorkspace()
	sb.Lineage = []string{"planner", "fmt"}
	s := mustOCI(t, sb, ociProc(), ociRun(), ociGoldenHost())
	for k := range s.Annotations {
		if !strings.HasPrefix(k, AnnotationPrefix) {
			t.Errorf("annotation %s lacks the prefix", k)
		}
	}
	if got := s.Annotations[AnnotationLineage]; got != `["planner","fmt"]` {
		t.Errorf("lineage %q", got)
	}
	if got := s.Annotations[AnnotationNetwork]; got != "off" {
		t.Errorf("network %q", got)
	}
	if _, ok := s.Annotations[AnnotationUnenforced]; ok {
		t.Error("unenforced annotation on a fully enforced sandbox")
	}
	d, _ := SandboxDigest(sb)
	if s.Annotations[AnnotationSandboxDigest] != d || !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
		t.Errorf("digest %q vs %q", s.Annotations[AnnotationSandboxDigest], d)
	}
	top := mustOCI(t, ociWorkspace(), ociProc(), ociRun(), ociGoldenHost())
	if got := top.Annotations[AnnotationLineage]; got != "[]" {
		t.Errorf("top-level lineage %q", got)
	}
}

func TestOCISandboxDigest(t *testing.T) {
	digest := func(sb *Sandbox) string {
		t.Helper()
		d, err := SandboxDigest(sb)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := ociWorkspace()
	b := ociWorkspace()
	b.Deny, b.Lineage, b.Network.Allow = []string{}, []string{}, []string{}
	b.Env.Set = map[string]string{"CI": "1"}
	if digest(a) != digest(b) {
		t.Error("nil and empty lists give different digests")
	}
	c := ociWorkspace()
	c.Readonly = true
	if digest(a) == digest(c) {
		t.Error("different sandboxes share a digest")
	}
	before := *a
	_ = digest(a)
	if a.Deny != nil || a.Lineage != nil || before.Root != a.Root {
		t.Error("SandboxDigest changed its argument")
	}
}

func TestOCISeccompIncluded(t *testing.T) {
	s := mustOCI(t, ociWorkspace(), ociProc(), ociRun(), ociGoldenHost())
	want, _ := DefaultSeccomp("amd64")
	got, _ := json.Marshal(s.Linux.Seccomp)
	w, _ := json.Marshal(want)
	if !bytes.Equal(got, w) {
		t.Error("spec does not carry Docker's default profile")
	}
	h := ociGoldenHost()
	h.goarch = "mips64"
	if s, err := toOCI(ociWorkspace(), ociProc(), ociRun(), h); !errors.Is(err, ErrUnenforceable) || s != nil {
		t.Errorf("unknown architecture: err %v, spec %v; want ErrUnenforceable and no spec", err, s != nil)
	}
}

func seccompRules(p *specs.LinuxSeccomp, name string) []specs.LinuxSyscall {
	var out []specs.LinuxSyscall
	for _, r := range p.Syscalls {
		if slices.Contains(r.Names, name) {
			out = append(out, r)
		}
	}
	return out
}

func TestSeccompDefault(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			p, err := DefaultSeccomp(arch)
			if err != nil {
				t.Fatal(err)
			}
			if p.DefaultAction != specs.ActErrno || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 {
				t.Errorf("default %s/%v, want SCMP_ACT_ERRNO/EPERM", p.DefaultAction, p.DefaultErrnoRet)
			}
			wantArch := map[string]specs.Arch{"amd64": specs.ArchX86_64, "arm64": specs.ArchAARCH64}[arch]
			if len(p.Architectures) == 0 || p.Architectures[0] != wantArch {
				t.Errorf("architectures %v", p.Architectures)
			}
			// Syscalls that need a capability cordon never grants must
			// not be allowed at all.
			for _, name := range []string{"mount", "umount2", "unshare", "setns", "bpf", "perf_event_open",
				"init_module", "reboot", "chroot", "kexec_load", "open_by_handle_at", "io_uring_setup",
				"io_uring_enter", "fsopen", "move_mount", "kcmp", "pidfd_getfd", "keyctl", "add_key", "userfaultfd"} {
				if rules := seccompRules(p, name); len(rules) > 0 {
					t.Errorf("%s is listed: %+v", name, rules)
				}
			}
			for _, name := range []string{"read", "execve", "ptrace", "landlock_create_ruleset", "statx"} {
				if rules := seccompRules(p, name); len(rules) != 1 || rules[0].Action != specs.ActAllow || len(rules[0].Args) != 0 {
					t.Errorf("%s: %+v, want one unconditional allow", name, rules)
				}
			}
			// No call may set S_ISUID or S_ISGID: each mode-taking call
			// is allowed only with those bits clear (or, for the open
			// family, when it creates nothing); openat2 gets ENOSYS.
			for _, m := range seccompModeArg {
				rules := seccompRules(p, m.name)
				want := 1
				if m.hasFlags {
					want = 2
				}
				if len(rules) != want || len(rules[0].Args) != 1 || rules[0].Args[0] != (specs.LinuxSeccompArg{
					Index: m.mode, Value: 0o6000, ValueTwo: 0, Op: specs.OpMaskedEqual}) {
					t.Errorf("%s rules %+v, want allowed only without S_ISUID|S_ISGID", m.name, rules)
				}
			}
			if o2 := seccompRules(p, "openat2"); len(o2) != 1 || o2[0].Action != specs.ActErrno || *o2[0].ErrnoRet != 38 {
				t.Errorf("openat2 rules %+v, want ENOSYS", o2)
			}
			clone := seccompRules(p, "clone")
			if len(clone) != 1 || len(clone[0].Args) != 1 || clone[0].Args[0] != (specs.LinuxSeccompArg{
				Index: 0, Value: 0x7E020000, ValueTwo: 0, Op: specs.OpMaskedEqual}) {
				t.Errorf("clone rules %+v, want a namespace-flag mask", clone)
			}
			clone3 := seccompRules(p, "clone3")
			if len(clone3) != 1 || clone3[0].Action != specs.ActErrno || clone3[0].ErrnoRet == nil || *clone3[0].ErrnoRet != 38 {
				t.Errorf("clone3 rules %+v, want ENOSYS", clone3)
			}
			for _, r := range seccompRules(p, "socket") {
				for _, a := range r.Args {
					if a.Op == specs.OpEqualTo && a.Value == 40 {
						t.Error("AF_VSOCK allowed")
					}
					if a.Op == specs.OpLessThan && a.Value > 12 {
						t.Errorf("socket families below %d allowed", a.Value)
					}
				}
			}
			for _, r := range seccompRules(p, "personality") {
				if len(r.Args) != 1 {
					t.Errorf("unconditional personality rule %+v", r)
				}
			}
		})
	}
	t.Run("per-architecture calls", func(t *testing.T) {
		amd, _ := DefaultSeccomp("amd64")
		arm, _ := DefaultSeccomp("arm64")
		if len(seccompRules(amd, "arch_prctl")) != 1 || len(seccompRules(arm, "arch_prctl")) != 0 {
			t.Error("arch_prctl must be amd64 only")
		}
		if len(seccompRules(arm, "set_tls")) != 1 || len(seccompRules(amd, "set_tls")) != 0 {
			t.Error("set_tls must be arm64 only")
		}
	})
	t.Run("unknown architecture", func(t *testing.T) {
		p, err := DefaultSeccomp("riscv64")
		if !errors.Is(err, ErrUnenforceable) || p != nil {
			t.Errorf("err %v, profile %v", err, p)
		}
		if !strings.Contains(err.Error(), "amd64") {
			t.Errorf("message %q does not name the supported architectures", err)
		}
	})
	t.Run("fresh copies", func(t *testing.T) {
		a, _ := DefaultSeccomp("amd64")
		a.Syscalls[0].Names[0] = "changed"
		b, _ := DefaultSeccomp("amd64")
		if b.Syscalls[0].Names[0] == "changed" {
			t.Error("DefaultSeccomp shares its data with callers")
		}
	})
	t.Run("no duplicate names in the allow list", func(t *testing.T) {
		seen := map[string]bool{}
		for _, n := range seccompAllowed {
			if seen[n] {
				t.Errorf("%s listed twice", n)
			}
			seen[n] = true
		}
	})
}

// TestOCIMissingProtectStillEnforced: the spec still carries the read-only
// rebind and the mask of a missing path (a runtime that skips missing
// paths skips them; cordon's runner enforces them with its broker), and the
// translation creates nothing on the host.
func TestOCIMissingProtectStillEnforced(t *testing.T) {
	ws := t.TempDir()
	sb := &Sandbox{Root: ws, System: System{Kind: SystemNone}, Protect: []string{ws + "/.git/hooks"}, Deny: []string{ws + "/.env"}}
	s, err := toOCI(sb, Process{Args: []string{"true"}}, RunOptions{Rootfs: "/run/x"}, ociGoldenHost())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Linux.ReadonlyPaths, ws+"/.git/hooks") || !slices.Contains(s.Linux.MaskedPaths, ws+"/.env") {
		t.Errorf("missing paths dropped: ro %v masked %v", s.Linux.ReadonlyPaths, s.Linux.MaskedPaths)
	}
	for _, p := range []string{ws + "/.git", ws + "/.env"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after translation: %v", p, err)
		}
	}
}

func ExampleToOCI() {
	sb := &Sandbox{
		Root:             "/home/dev/proj",
		Protect:          []string{"/home/dev/proj/.git/hooks"},
		System:           System{Kind: SystemNone},
		Limits:           Limits{Memory: 256 << 20},
		RequireOSSandbox: true,
	}
	s, err := ToOCI(sb, Process{Args: []string{"make", "test"}, UID: 1000, GID: 1000},
		RunOptions{Rootfs: "/run/cordon/runs/1/rootfs"},
		WithHostname("build"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range s.Mounts {
		if m.Type == "bind" {
			fmt.Println(m.Destination, m.Options)
		}
	}
	fmt.Println("network namespace:", slices.Contains(ociNamespaces(s), specs.NetworkNamespace))
	fmt.Println("hostname:", s.Hostname, "user:", s.Process.User.UID, "no_new_privs:", s.Process.NoNewPrivileges)
	fmt.Println("protected:", s.Linux.ReadonlyPaths[len(s.Linux.ReadonlyPaths)-1])
	fmt.Println("memory+swap:", *s.Linux.Resources.Memory.Limit, *s.Linux.Resources.Memory.Swap)
	// Output:
	// /home/dev/proj [rbind nosuid nodev]
	// network namespace: true
	// hostname: build user: 1000 no_new_privs: true
	// protected: /home/dev/proj/.git/hooks
	// memory+swap: 268435456 268435456
}

// TestOCIGuardsAncestors is the security property "a guarded path cannot be
// renamed away": every directory between the zone and a protect or deny
// path becomes a mount point (EBUSY on rename), and a symlinked ancestor is
// refused rather than bound from the host.
func TestOCIGuardsAncestors(t *testing.T) {
	sb := ociWorkspace()
	s := mustOCI(t, sb, ociProc(), ociRun(), ociGoldenHost())
	var err error
	m, ok := ociMountAt(s, ociWS+"/.git")
	if !ok || m.Source != ociWS+"/.git" || !slices.Contains(m.Options, "rbind") || slices.Contains(m.Options, "ro") {
		t.Fatalf(".git must be a read-write bind onto itself: %+v (found %v)", m, ok)
	}
	h := ociGoldenHost()
	h.lstat = func(p string) (fs.FileInfo, error) {
		if p == ociWS+"/.git" {
			return fakeInfo{name: ".git", mode: fs.ModeSymlink | 0o777}, nil
		}
		return goldenLstat(p)
	}
	_, err = toOCI(sb, ociProc(), ociRun(), h)
	if !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked ancestor must be refused, got %v", err)
	}
	// A protect path that is itself a symlink cannot be covered by a mount.
	h.lstat = func(p string) (fs.FileInfo, error) {
		if p == ociWS+"/.bashrc" {
			return fakeInfo{name: ".bashrc", mode: fs.ModeSymlink | 0o777}, nil
		}
		return goldenLstat(p)
	}
	if _, err := toOCI(sb, ociProc(), ociRun(), h); !errors.Is(err, ErrUnenforceable) || !strings.Contains(err.Error(), ".bashrc") {
		t.Fatalf("a symlinked protect path must be refused, got %v", err)
	}
	// A guard beneath a protect path stays read-only: protect .git, deny
	// .git/creds/token, and .git/creds must not become writable.
	nested := ociWorkspace()
	nested.Protect = []string{ociWS + "/.git"}
	nested.Deny = []string{ociWS + "/.git/creds/token"}
	h.lstat = func(p string) (fs.FileInfo, error) {
		if p == ociWS+"/.git/creds" {
			return fakeInfo{name: "creds", mode: fs.ModeDir | 0o755}, nil
		}
		return goldenLstat(p)
	}
	s, err = toOCI(nested, ociProc(), ociRun(), h)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := ociMountAt(s, ociWS+"/.git/creds"); !ok || !slices.Contains(m.Options, "ro") {
		t.Fatalf("guard under a protect path must be read-only: %+v (found %v)", m, ok)
	}
	// A read-only workspace needs no guards: nothing in it can be renamed.
	ro := ociWorkspace()
	ro.Readonly = true
	s = mustOCI(t, ro, ociProc(), ociRun(), ociGoldenHost())
	if _, ok := ociMountAt(s, ociWS+"/.git"); ok {
		t.Fatal("read-only workspace got a guard mount")
	}
}
