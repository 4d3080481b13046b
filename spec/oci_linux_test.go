//go:build linux

package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/configs/validate"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// libcontainerConfig converts s the way cordon's runner and runc do, and
// validates the result with libcontainer's own checks.
func libcontainerConfig(t *testing.T, s *specs.Spec) *configs.Config {
	t.Helper()
	rootless := s.Linux != nil && len(s.Linux.UIDMappings) > 0
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:       "cordon-spec-test",
		UseSystemdCgroup: false,
		NoPivotRoot:      false,
		NoNewKeyring:     true,
		Spec:             s,
		RootlessEUID:     rootless,
		RootlessCgroups:  rootless,
	})
	if err != nil {
		t.Fatalf("specconv.CreateLibcontainerConfig: %v", err)
	}
	if err := validate.Validate(cfg); err != nil {
		t.Fatalf("validate.Validate: %v", err)
	}
	return cfg
}

// ociRealDir returns a fresh directory with its symlinks resolved, as
// validate's rootfs check wants.
func ociRealDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestOCILibcontainerAcceptsGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenOCIDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < len(ociGoldenCases()) {
		t.Fatalf("found %d golden files, want %d", len(files), len(ociGoldenCases()))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var s specs.Spec
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			// The golden root is a fixed path; validate wants one that
			// exists.
			s.Root.Path = ociRealDir(t)
			checkLibcontainerConfig(t, &s, libcontainerConfig(t, &s))
		})
	}
}

func TestOCILibcontainerAcceptsThisHost(t *testing.T) {
	ws := ociRealDir(t)
	cases := map[string]func(*Sandbox){
		"workspace": func(*Sandbox) {},
		"readonly":  func(sb *Sandbox) { sb.Readonly = true },
		"network":   func(sb *Sandbox) { sb.Network = Network{Enabled: true} },
		"strict": func(sb *Sandbox) {
			sb.System = System{Kind: SystemNone}
			for _, d := range ExistingDirs(RuntimeDirs) {
				sb.Mounts = append(sb.Mounts, Mount{Source: d, Target: d, Readonly: true})
			}
		},
	}
	for name, edit := range cases {
		for _, rootless := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s rootless=%v", name, rootless), func(t *testing.T) {
				sb := ociWorkspace()
				sb.Root = ws
				sb.Protect = []string{ws + "/.git/hooks"}
				sb.Deny = []string{ws + "/.env"}
				edit(sb)
				ro := RunOptions{Rootfs: ociRealDir(t), Rootless: rootless,
					HostUID: uint32(os.Getuid()), HostGID: uint32(os.Getgid())}
				s, err := ToOCI(sb, Process{Args: []string{"true"}, UID: 1000, GID: 1000}, ro)
				if err != nil {
					t.Fatalf("ToOCI: %v", err)
				}
				checkLibcontainerConfig(t, s, libcontainerConfig(t, s))
			})
		}
	}
}

// checkLibcontainerConfig asserts that what libcontainer will do matches
// what the spec means.
func checkLibcontainerConfig(t *testing.T, s *specs.Spec, cfg *configs.Config) {
	t.Helper()
	var devs []string
	for _, d := range cfg.Devices {
		devs = append(devs, d.Path)
	}
	slices.Sort(devs)
	if want := []string{"/dev/full", "/dev/null", "/dev/random", "/dev/tty", "/dev/urandom", "/dev/zero"}; !slices.Equal(devs, want) {
		t.Errorf("devices = %v, want exactly %v", devs, want)
	}
	if r := cfg.Cgroups.Resources.Devices; len(r) == 0 || r[0].Allow {
		t.Errorf("first device rule %+v, want deny-all", r)
	}
	if c := cfg.Capabilities; c == nil ||
		len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
		t.Errorf("capabilities = %+v, want present and empty", c)
	}
	if !cfg.NoNewPrivileges {
		t.Error("no_new_privs off")
	}
	if !cfg.Readonlyfs {
		t.Error("rootfs writable")
	}
	if cfg.RootPropagation != unix.MS_PRIVATE|unix.MS_REC {
		t.Errorf("root propagation %#x, want rprivate", cfg.RootPropagation)
	}
	if cfg.Seccomp == nil || cfg.Seccomp.DefaultAction != configs.Errno || len(cfg.Seccomp.Syscalls) == 0 {
		t.Errorf("seccomp = %+v", cfg.Seccomp)
	}
	for _, ns := range []configs.NamespaceType{configs.NEWNS, configs.NEWPID, configs.NEWIPC, configs.NEWUTS} {
		if !cfg.Namespaces.Contains(ns) {
			t.Errorf("namespace %s missing", ns)
		}
	}
	netns := slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
	if cfg.Namespaces.Contains(configs.NEWNET) != netns {
		t.Errorf("network namespace %v, spec says %v", cfg.Namespaces.Contains(configs.NEWNET), netns)
	}
	if netns && (len(cfg.Networks) != 1 || cfg.Networks[0].Type != "loopback") {
		t.Errorf("networks %+v, want loopback only", cfg.Networks)
	}
	if len(s.Linux.UIDMappings) > 0 {
		if !cfg.Namespaces.Contains(configs.NEWUSER) || len(cfg.UIDMappings) != 1 || cfg.UIDMappings[0].Size != 1 {
			t.Errorf("rootless mappings %+v", cfg.UIDMappings)
		}
	}
	if s.Annotations[AnnotationNetwork] != "on" && !netns {
		t.Errorf("network %q but no network namespace", s.Annotations[AnnotationNetwork])
	}
	for _, m := range cfg.Mounts {
		if m.Device != "bind" {
			continue
		}
		if m.Flags&(unix.MS_BIND|unix.MS_REC) != unix.MS_BIND|unix.MS_REC || m.Flags&unix.MS_NOSUID == 0 || m.Flags&unix.MS_NODEV == 0 {
			t.Errorf("bind %s flags %#x, want rbind nosuid nodev", m.Destination, m.Flags)
		}
		if m.Data != "" {
			t.Errorf("bind %s carries filesystem data %q, which the kernel ignores", m.Destination, m.Data)
		}
		readonly := m.Flags&unix.MS_RDONLY != 0
		recursive := m.RecAttr != nil && m.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY != 0
		if readonly != recursive {
			t.Errorf("bind %s: ro %v but recursive ro %v", m.Destination, readonly, recursive)
		}
	}
	if !slices.Equal(cfg.MaskPaths, s.Linux.MaskedPaths) || !slices.Equal(cfg.ReadonlyPaths, s.Linux.ReadonlyPaths) {
		t.Error("masked or read-only paths changed in conversion")
	}
}

// TestSeccompEnforced loads the default profile into a child process with
// libcontainer's own seccomp code and checks what it refuses. The probes
// are chosen so that, were the filter missing, they would still fail
// harmlessly, with a different errno.
func TestSeccompEnforced(t *testing.T) {
	if os.Getenv("CORDON_SECCOMP_CHILD") == "1" {
		seccompChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSeccompEnforced$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CORDON_SECCOMP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SECCOMP-UNAVAILABLE") {
		t.Skip("libcontainer was built without seccomp support; run the tests with -tags seccomp (make unit does)")
	}
	results := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "PROBE" {
			results[f[1]] = f[2]
		}
	}
	want := map[string]string{
		"getpid":           "ok",
		"socket-unix":      "ok",
		"personality-get":  "ok",
		"unshare-user":     "EPERM",
		"mount":            "EPERM",
		"socket-vsock":     "EPERM",
		"socket-alg":       "EPERM",
		"io_uring_setup":   "EPERM",
		"bpf":              "EPERM",
		"keyctl":           "EPERM",
		"personality-addr": "EPERM",
		"clone3":           "ENOSYS",
	}
	for probe, w := range want {
		if got := results[probe]; got != w {
			t.Errorf("%s: got %q, want %s", probe, got, w)
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", out)
	}
}

func seccompChild() {
	runtime.LockOSThread()
	prof, err := DefaultSeccomp(runtime.GOARCH)
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	cfg, err := specconv.SetupSeccomp(prof)
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	if !seccomp.Enabled {
		fmt.Println("SECCOMP-UNAVAILABLE")
		os.Exit(0)
	}
	if _, err := seccomp.InitSeccomp(cfg); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	probe := func(name string, r1 uintptr, errno unix.Errno) {
		res := "ok"
		if errno != 0 {
			res = unix.ErrnoName(errno)
		} else if strings.HasPrefix(name, "socket") {
			_ = unix.Close(int(r1))
		}
		fmt.Println("PROBE", name, res)
	}
	src, _ := unix.BytePtrFromString("/nonexistent-cordon-probe")
	r1, _, e := unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	probe("getpid", r1, e)
	r1, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0)
	probe("socket-unix", r1, e)
	r1, _, e = unix.RawSyscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	probe("personality-get", r1, e)
	// Without the filter: EINVAL (a multithreaded process cannot unshare
	// its user namespace).
	r1, _, e = unix.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	probe("unshare-user", r1, e)
	// Without the filter: ENOENT.
	r1, _, e = unix.RawSyscall6(unix.SYS_MOUNT, uintptr(unsafe.Pointer(src)), uintptr(unsafe.Pointer(src)), 0, unix.MS_BIND, 0, 0)
	probe("mount", r1, e)
	r1, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	probe("socket-vsock", r1, e)
	r1, _, e = unix.RawSyscall(unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET, 0)
	probe("socket-alg", r1, e)
	// Without the filter: EFAULT or EINVAL.
	r1, _, e = unix.RawSyscall(unix.SYS_IO_URING_SETUP, 0, 0, 0)
	probe("io_uring_setup", r1, e)
	r1, _, e = unix.RawSyscall(unix.SYS_BPF, 0xffff, 0, 0)
	probe("bpf", r1, e)
	// KEYCTL_GET_KEYRING_ID of the session keyring, without creating it.
	r1, _, e = unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0)
	probe("keyctl", r1, e)
	// ADDR_NO_RANDOMIZE would turn off ASLR for later execs.
	r1, _, e = unix.RawSyscall(unix.SYS_PERSONALITY, 0x0040000, 0, 0)
	probe("personality-addr", r1, e)
	// Without the filter: EINVAL (size 0).
	r1, _, e = unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	probe("clone3", r1, e)
	os.Exit(0)
}
