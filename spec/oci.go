package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Annotation keys ToOCI sets. They share the reverse-domain prefix
// AnnotationPrefix.
const (
	// AnnotationPrefix starts every cordon annotation.
	AnnotationPrefix = "run.cordon."
	// AnnotationLineage is the worker chain as a JSON list, outermost first
	// ("[]" for a top-level sandbox).
	AnnotationLineage = AnnotationPrefix + "lineage"
	// AnnotationNetwork is the network policy: "off", "on" or "allow: …".
	AnnotationNetwork = AnnotationPrefix + "network"
	// AnnotationSandboxDigest is "sha256:" and the hex digest of the
	// sandbox's canonical JSON.
	AnnotationSandboxDigest = AnnotationPrefix + "sandbox-digest"
	// AnnotationUnenforced lists, as a JSON list, the parts of the sandbox
	// that are not enforced ("network.allow", "limits"); it is set only when
	// that list is not empty, which require_os_sandbox: false allows.
	AnnotationUnenforced = AnnotationPrefix + "unenforced"
)

// DefaultHostname is the hostname inside the sandbox unless RunOptions
// sets another.
const DefaultHostname = "cordon"

// dockerMaskedPaths are Docker's default masked paths: kernel interfaces
// that leak host information or are not namespaced.
var dockerMaskedPaths = []string{
	"/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",
	"/proc/timer_list", "/proc/timer_stats",
	"/sys/devices/virtual/powercap", "/sys/firmware",
}

// dockerReadonlyPaths are Docker's default read-only paths.
var dockerReadonlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}

// Process is the command to run in the sandbox.
type Process struct {
	// Args is the command and its arguments; it must not be empty.
	Args []string
	// Cwd is the working directory inside the sandbox; "" means the
	// workspace root, or "/" when there is none.
	Cwd string
	// Env is the environment as KEY=VALUE; nil means ProcessEnv(sb).
	// PATH is added when missing.
	Env []string
	// UID and GID are the ids the process runs as inside the sandbox:
	// the caller's own, so files it writes belong to the caller. A
	// rootless run uses 0 and 0 instead (see RunOptions.Rootless).
	UID, GID uint32
	// AdditionalGids are supplementary groups; a rootless run cannot set
	// any.
	AdditionalGids []uint32
	// Terminal gives the process a pseudo-terminal.
	Terminal bool
}

// RunOptions carry what only the runner knows.
type RunOptions struct {
	// Rootfs is an empty host directory the runner created for this run; it
	// becomes root.path (read-only; mount points are created in it before
	// it is made read-only). It is ignored with system: rootfs, whose
	// directory is the root itself.
	Rootfs string
	// Rootless builds a user namespace in which exactly one uid and one
	// gid exist, 0 and 0, mapped to HostUID and HostGID, and runs the
	// process as them: inside it is uid 0 with no capabilities, on the
	// host (and in every file it writes) it is the caller. Process.UID and
	// GID are not used: libcontainer needs uid 0 mapped to set the
	// container up, and an unprivileged caller can map only its own id.
	Rootless bool
	// HostUID and HostGID are the caller's ids on the host (rootless only).
	HostUID, HostGID uint32
	// Placeholders says the caller creates the missing deny and protect
	// paths inside writable mounts as empty directories before the spec is
	// used (a bundle for another runtime), so the spec guards them as
	// such. cordon's own runs leave it false: their broker refuses creating
	// those paths, with nothing on the host.
	Placeholders bool
	// CgroupsPath is linux.cgroupsPath; "" leaves it unset.
	CgroupsPath string
	// Hostname is the sandbox's hostname; "" means DefaultHostname.
	Hostname string
	// Host is what the runner probed of the kernel that will run the
	// sandbox; nil means ModernHost.
	Host *Host
	// Unenforced are the keys of the parts of the sandbox the backend does
	// not enforce (runner.Enforcement.UnenforcedKeys), recorded in
	// AnnotationUnenforced.
	Unenforced []string
	// NetworkGuarded: the backend enforces a network allow list itself
	// (a tun device in the sandbox's network namespace and cordon's own
	// TCP/IP stack), so the allow list is not listed as unenforced.
	NetworkGuarded bool
	// Links, when they hold for the sandbox translated (Links.For, with
	// the same system directories), are the entries that hold its deny
	// and protect rules on what symlinks reach, found by the caller's
	// walk (FindLinks); otherwise, and when nil, the translation walks.
	Links *Links
}

// Host is what the translation needs to know of the kernel that will run
// the sandbox. The runner probes it (in its _linux.go files) and passes it
// in, so this package reads no /proc file and means the same on every OS.
type Host struct {
	// RecursiveReadonly says the kernel has mount_setattr(2) (Linux 5.12),
	// which runc's "rro" mount option needs.
	RecursiveReadonly bool
	// CgroupNamespace says the kernel has cgroup namespaces.
	CgroupNamespace bool
	// Submounts reports whether anything is mounted strictly below a host
	// directory. It is asked only without RecursiveReadonly, where a
	// read-only mount with submounts is refused; nil refuses every
	// read-only mount then, as nothing can be known.
	Submounts func(dir string) (bool, error)
	// Arch is the GOARCH whose seccomp profile the spec carries; "" means
	// this build's.
	Arch string
}

// ModernHost is the host assumed when RunOptions.Host is nil: a kernel with
// recursive read-only binds and cgroup namespaces, of this build's
// architecture. A spec printed for review (or on another OS) uses it; a
// runner passes the facts it probed.
func ModernHost() Host {
	return Host{RecursiveReadonly: true, CgroupNamespace: true, Arch: runtime.GOARCH}
}

// hostInfo is what ToOCI learns from the host: the runner's Host plus the
// host paths the translation looks at. Tests replace it so golden files do
// not depend on the machine.
type hostInfo struct {
	// systemDirs and secrets are SystemDirs and SystemSecrets.
	systemDirs func(*Sandbox) []string
	secrets    func(*Sandbox) []string
	// recursiveRO says the kernel has mount_setattr(2) (5.12+), which
	// runc's "rro" option needs.
	recursiveRO bool
	// hasSubmounts says whether anything is mounted below a host path.
	hasSubmounts func(string) (bool, error)
	// cgroupNS says the kernel has cgroup namespaces.
	cgroupNS bool
	// goarch picks the seccomp profile.
	goarch string
	// lstat looks at host paths (deny and protect guards).
	lstat func(string) (fs.FileInfo, error)
}

func currentHost(host *Host) hostInfo {
	h := ModernHost()
	if host != nil {
		h = *host
	}
	if h.Arch == "" {
		h.Arch = runtime.GOARCH
	}
	submounts := h.Submounts
	if submounts == nil {
		submounts = func(string) (bool, error) {
			return false, errors.New("the runner did not say which mounts this host has")
		}
	}
	return hostInfo{
		systemDirs:   SystemDirs,
		secrets:      SystemSecrets,
		recursiveRO:  h.RecursiveReadonly,
		hasSubmounts: submounts,
		cgroupNS:     h.CgroupNamespace,
		goarch:       h.Arch,
		lstat:        os.Lstat,
	}
}

// ToOCI translates sb into an OCI runtime spec that runs proc. The spec
// unshares the mount, pid, ipc, uts and (when the kernel has it) cgroup
// namespaces, and the network namespace unless the network is on; it mounts
// a minimal /proc and /dev, a private /tmp, the host system directories, the
// workspace and the extra mounts as read-only or read-write binds, masks
// deny paths and host secrets, makes protect paths read-only, sets cgroup
// limits and rlimits, and runs proc with no capabilities, no_new_privs and
// Docker's default seccomp profile. opts are applied last.
//
// Every problem is reported at once. What the backend cannot enforce is
// decided by the backend (runner.Enforce), never here: a network allow list
// that reaches the translation keeps the network namespace (no network at
// all: narrower, never wider) and is listed as "network.allow" in
// AnnotationUnenforced, with RunOptions.Unenforced, unless
// RunOptions.NetworkGuarded says the backend enforces it.
func ToOCI(sb *Sandbox, proc Process, ro RunOptions, opts ...Opt) (*specs.Spec, error) {
	h := currentHost(ro.Host)
	if sb != nil {
		// Deny and protect on what the patterns' matches that are
		// symlinks reach, and at every sandbox path of the same host file.
		var err error
		if sb, err = withPatternLinks(sb, h.systemDirs(sb), ro.Links); err != nil {
			return nil, err
		}
		sb = WithAliases(sb)
	}
	return toOCI(sb, proc, ro, h, opts...)
}

func toOCI(sb *Sandbox, proc Process, ro RunOptions, h hostInfo, opts ...Opt) (*specs.Spec, error) {
	if sb == nil {
		return nil, errors.New("oci: no sandbox")
	}
	var problems []error
	// Mounts hold the deny and protect paths; the patterns' matches that
	// exist now are deny paths like any other (the runner's broker holds
	// the patterns themselves).
	orig := sb
	// A pattern that cannot be written for a mount it reaches is refused.
	sb, err := withoutPatterns(sb)
	if err = errors.Join(err, AliasProblems(orig)); err != nil {
		problems = append(problems, err)
	}

	rootPath := ro.Rootfs
	if sb.System.Kind == SystemRootfs {
		rootPath = sb.System.Rootfs
	}
	if err := checkAbs("rootfs", rootPath); err != nil {
		problems = append(problems, err)
	}
	hostname := ro.Hostname
	if hostname == "" {
		hostname = DefaultHostname
	}

	namespaces := []specs.LinuxNamespaceType{specs.MountNamespace, specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace}
	unenforced := slices.Clone(ro.Unenforced)
	switch {
	case !sb.Network.Enabled:
		namespaces = append(namespaces, specs.NetworkNamespace)
	case len(sb.Network.Allow) > 0:
		// A network namespace gives all hosts or none, until the
		// backend's guard gives it the allowed ones.
		namespaces = append(namespaces, specs.NetworkNamespace)
		if !ro.NetworkGuarded && !slices.Contains(unenforced, "network.allow") {
			unenforced = append(unenforced, "network.allow")
		}
	}
	if h.cgroupNS {
		namespaces = append(namespaces, specs.CgroupNamespace)
	}

	mounts, err := sandboxMounts(sb, ro.Rootless, h)
	if err != nil {
		problems = append(problems, err)
	}

	g, err := guardMounts(sb, h)
	if err != nil {
		problems = append(problems, err)
	}
	mounts = append(mounts, g.mounts...)
	masked := slices.Clone(dockerMaskedPaths)
	masked = append(masked, g.masked...)
	readonly := readonlyPaths(sb)

	if proc.Cwd == "" {
		proc.Cwd = sb.Root
		if proc.Cwd == "" {
			proc.Cwd = "/"
		}
	}
	if proc.Env == nil {
		proc.Env = ProcessEnv(sb)
	} else {
		proc.Env = withDefaultPath(proc.Env)
	}
	var userns Opt
	if ro.Rootless {
		if len(proc.AdditionalGids) > 0 {
			problems = append(problems, fmt.Errorf(
				"supplementary groups %v cannot be set in a rootless sandbox (the user namespace maps one uid and one gid): %w",
				proc.AdditionalGids, ErrUnenforceable))
		}
		// libcontainer sets the container up as uid 0 of the new user
		// namespace and refuses a namespace without it; an unprivileged
		// caller owns exactly one uid, so 0 is the only id there is.
		proc.UID, proc.GID = 0, 0
		userns = WithUserNamespace(0, ro.HostUID, 0, ro.HostGID)
	}

	seccomp, err := DefaultSeccomp(h.goarch)
	if err != nil {
		problems = append(problems, err)
	}
	annotations, err := sandboxAnnotations(orig, unenforced)
	if err != nil {
		problems = append(problems, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}

	s := &specs.Spec{Version: specs.Version}
	build := Compose(
		WithRoot(rootPath, true),
		WithHostname(hostname),
		WithNamespaces(namespaces...),
		userns,
		WithMounts(mounts...),
		WithRootfsPropagation("rprivate"),
		WithMasks(masked...),
		WithReadonlyPaths(readonly...),
		WithDefaultDevices(),
		WithLimits(sb.Limits),
		WithProcess(proc),
		WithCapabilities(),
		WithSeccomp(seccomp),
		WithCgroupsPath(ro.CgroupsPath),
		WithAnnotations(annotations),
		Compose(opts...),
	)
	if err := build(s); err != nil {
		return nil, err
	}
	return s, nil
}

// zone is one bind mount the sandbox declares: the workspace or an extra
// mount.
type zone struct {
	source, target string
	readonly       bool
}

// sandboxZones returns the workspace and the extra mounts. A zone whose
// target lies at or below a protect path is made read-only: protect must
// hold for everything below it, and libcontainer's read-only rebind of a
// protect path is not recursive.
func sandboxZones(sb *Sandbox) []zone {
	var zs []zone
	if sb.Root != "" {
		zs = append(zs, zone{source: sb.Root, target: sb.Root, readonly: sb.Readonly})
	}
	for _, m := range sb.Mounts {
		t := m.Target
		if t == "" {
			t = m.Source
		}
		zs = append(zs, zone{source: m.Source, target: t, readonly: m.Readonly})
	}
	for i := range zs {
		for _, p := range sb.Protect {
			if within(zs[i].target, p) {
				zs[i].readonly = true
			}
		}
	}
	return zs
}

// sandboxMounts builds the mount list: the minimal /proc and /dev, a
// private /tmp (unless a zone is mounted there), the host system
// directories (unless a zone replaces one), then the zones.
func sandboxMounts(sb *Sandbox, rootless bool, h hostInfo) ([]specs.Mount, error) {
	var problems []error
	zones := sandboxZones(sb)
	declared := map[string]bool{}
	for _, z := range zones {
		declared[z.target] = true
		if err := checkZone(z); err != nil {
			problems = append(problems, err)
		}
	}

	devpts := []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}
	if !rootless {
		// gid 5 (tty) is not mapped in a rootless user namespace.
		devpts = append(devpts, "gid=5")
	}
	ms := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: devpts},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
	}
	if !declared["/tmp"] {
		ms = append(ms, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}})
	}
	for _, d := range h.systemDirs(sb) {
		if declared[d] {
			continue
		}
		m, err := bindMount(d, d, true, h)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		ms = append(ms, m)
	}
	for i, z := range zones {
		if i == 0 && sb.Root != "" && sb.Overlay != nil {
			ms = append(ms, overlayMount(sb, rootless))
			continue
		}
		m, err := bindMount(z.source, z.target, z.readonly, h)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		ms = append(ms, m)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	sortMounts(ms)
	return ms, nil
}

// checkZone refuses mount targets libcontainer cannot or must not mount:
// the root itself and anything inside /proc, /dev or /sys, which ToOCI owns
// (validation refuses them too; this keeps a hand-built Sandbox honest).
func checkZone(z zone) error {
	if err := checkAbs("mount source", z.source); err != nil {
		return err
	}
	if err := checkAbs("mount target", z.target); err != nil {
		return err
	}
	if placementProblem(z.target) != "" {
		return fmt.Errorf("mount target %s: the sandbox's own /, /proc, /dev and /sys cannot be replaced; "+
			"choose a target elsewhere: %w", z.target, ErrUnenforceable)
	}
	return nil
}

// bindMount builds a recursive bind with nosuid and nodev. A read-only one
// gets "ro" and, where the kernel has mount_setattr, "rro", so submounts of
// the source are read-only too. On an older kernel a read-only source with
// submounts is refused rather than left partly writable.
func bindMount(source, target string, readonly bool, h hostInfo) (specs.Mount, error) {
	opts := []string{"rbind", "nosuid", "nodev"}
	if readonly {
		opts = append(opts, "ro")
		if h.recursiveRO {
			opts = append(opts, "rro")
		} else {
			sub, err := h.hasSubmounts(source)
			if err != nil {
				return specs.Mount{}, fmt.Errorf("read-only mount %s: cannot list its submounts: %w", target, err)
			}
			if sub {
				return specs.Mount{}, fmt.Errorf("read-only mount %s: %s has submounts and this kernel cannot make them "+
					"read-only (recursive read-only binds need Linux 5.12): %w", target, source, ErrUnenforceable)
			}
		}
	}
	return specs.Mount{Destination: target, Type: "bind", Source: source, Options: opts}, nil
}

func withDefaultPath(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			return env
		}
	}
	return append(slices.Clone(env), "PATH="+DefaultPath)
}

// sandboxAnnotations records the lineage, the network policy, the
// sandbox's digest and what is not enforced.
func sandboxAnnotations(sb *Sandbox, unenforced []string) (map[string]string, error) {
	lineage, err := json.Marshal(append([]string{}, sb.Lineage...))
	if err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	digest, err := SandboxDigest(sb)
	if err != nil {
		return nil, err
	}
	a := map[string]string{
		AnnotationLineage:       string(lineage),
		AnnotationNetwork:       sb.Network.String(),
		AnnotationSandboxDigest: digest,
	}
	if len(unenforced) > 0 {
		u, err := json.Marshal(unenforced)
		if err != nil {
			return nil, fmt.Errorf("annotations: %w", err)
		}
		a[AnnotationUnenforced] = string(u)
	}
	return a, nil
}

// SandboxDigest returns "sha256:" and the hex SHA-256 of sb's canonical
// JSON: encoding/json's field order and sorted map keys, with nil and empty
// lists and maps written alike, so equal sandboxes have equal digests.
func SandboxDigest(sb *Sandbox) (string, error) {
	c := *sb
	c.Mounts = make([]Mount, len(sb.Mounts))
	for i, m := range sb.Mounts {
		m.Suffixes = nonNil(m.Suffixes)
		c.Mounts[i] = m
	}
	c.Deny = nonNil(sb.Deny)
	c.Protect = nonNil(sb.Protect)
	c.Network.Allow = nonNil(sb.Network.Allow)
	c.Env.Pass = nonNil(sb.Env.Pass)
	if c.Env.Set == nil {
		c.Env.Set = map[string]string{}
	}
	c.Lineage = nonNil(sb.Lineage)
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("sandbox digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Placeholder is one missing deny or protect path: Rel below the host
// directory Zone of the writable mount that holds it.
type Placeholder struct {
	// Zone is the host directory of the mount (the user's own path; it is
	// opened as given).
	Zone string
	// Rel is the path below Zone, which must be created without following
	// any symlink.
	Rel string
}

// Path is the placeholder's host path.
func (p Placeholder) Path() string { return filepath.Join(p.Zone, p.Rel) }

// PlaceholderDirs is Placeholders with the zone each path lies in, so the
// runner can create them from the zone's directory without following
// symlinks.
func PlaceholderDirs(sb *Sandbox) []Placeholder { return placeholders(sb, os.Lstat) }

// MissingGuarded returns the deny and protect paths of sb (a sandbox
// WithAliases made, as Plan.Aliased) in writable zones that do not exist
// now: what a runtime without cordon's broker could only guard by
// making them on the host.
func MissingGuarded(sb *Sandbox) []Placeholder { return placeholders(sb, os.Lstat) }

func placeholders(sb *Sandbox, lstat func(string) (fs.FileInfo, error)) []Placeholder {
	zones := sandboxZones(sb)
	var out []Placeholder
	for _, p := range append(slices.Clone(sb.Deny), sb.Protect...) {
		z, ok := containingZone(zones, p)
		if !ok || z.readonly || IsPattern(p) {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, z.target), "/")
		host := filepath.Join(z.source, rel)
		_, err := lstat(host)
		if err == nil || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) {
			continue
		}
		ph := Placeholder{Zone: z.source, Rel: rel}
		if !slices.Contains(out, ph) {
			out = append(out, ph)
		}
	}
	return out
}

// containingZone returns the zone with the longest target holding p.
func containingZone(zones []zone, p string) (zone, bool) {
	best, found := zone{}, false
	for _, z := range zones {
		if within(p, z.target) && (!found || len(z.target) > len(best.target)) {
			best, found = z, true
		}
	}
	return best, found
}
