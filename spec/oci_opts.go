package spec

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Opt changes an OCI spec. Options are small and composable; ToOCI builds
// its spec from them, and callers may pass more to adjust the result.
type Opt func(*specs.Spec) error

// Compose returns an Opt that applies opts in order and stops at the first
// error. Nil options are skipped.
func Compose(opts ...Opt) Opt {
	return func(s *specs.Spec) error {
		for _, o := range opts {
			if o == nil {
				continue
			}
			if err := o(s); err != nil {
				return err
			}
		}
		return nil
	}
}

func ensureLinux(s *specs.Spec) *specs.Linux {
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
	return s.Linux
}

func ensureProcess(s *specs.Spec) *specs.Process {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
	return s.Process
}

func ensureResources(s *specs.Spec) *specs.LinuxResources {
	l := ensureLinux(s)
	if l.Resources == nil {
		l.Resources = &specs.LinuxResources{}
	}
	return l.Resources
}

// WithRoot sets the root filesystem, which must be an absolute, clean path.
func WithRoot(path string, readonly bool) Opt {
	return func(s *specs.Spec) error {
		if err := checkAbs("root path", path); err != nil {
			return err
		}
		s.Root = &specs.Root{Path: path, Readonly: readonly}
		return nil
	}
}

// WithHostname sets the hostname; it needs a UTS namespace, which ToOCI
// always creates.
func WithHostname(name string) Opt {
	return func(s *specs.Spec) error {
		s.Hostname = name
		return nil
	}
}

// WithNamespaces adds new (unshared) namespaces of the given types; a type
// already present is left as it is.
func WithNamespaces(types ...specs.LinuxNamespaceType) Opt {
	return func(s *specs.Spec) error {
		l := ensureLinux(s)
		for _, t := range types {
			if !hasNamespace(l, t) {
				l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: t})
			}
		}
		return nil
	}
}

// WithoutNamespace removes the namespace of type t, if present.
func WithoutNamespace(t specs.LinuxNamespaceType) Opt {
	return func(s *specs.Spec) error {
		l := ensureLinux(s)
		l.Namespaces = slices.DeleteFunc(l.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == t })
		return nil
	}
}

func hasNamespace(l *specs.Linux, t specs.LinuxNamespaceType) bool {
	for _, n := range l.Namespaces {
		if n.Type == t {
			return true
		}
	}
	return false
}

// WithUserNamespace adds a user namespace in which exactly one uid and one
// gid exist: containerUID maps to hostUID and containerGID to hostGID. Every
// other host id shows up as the overflow id (nobody). The mappings are built
// here rather than with runc's ToRootless, which also drops the network
// namespace.
func WithUserNamespace(containerUID, hostUID, containerGID, hostGID uint32) Opt {
	return func(s *specs.Spec) error {
		l := ensureLinux(s)
		if !hasNamespace(l, specs.UserNamespace) {
			l.Namespaces = append(l.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		}
		l.UIDMappings = []specs.LinuxIDMapping{{ContainerID: containerUID, HostID: hostUID, Size: 1}}
		l.GIDMappings = []specs.LinuxIDMapping{{ContainerID: containerGID, HostID: hostGID, Size: 1}}
		return nil
	}
}

// WithMounts appends mounts and then orders the whole mount list so that a
// parent always comes before its children (a stable sort by the depth of the
// destination). A bind mount must have an absolute Source and "bind" or
// "rbind" in its Options: libcontainer ignores Type "bind" alone.
func WithMounts(mounts ...specs.Mount) Opt {
	return func(s *specs.Spec) error {
		for _, m := range mounts {
			if err := checkAbs("mount destination", m.Destination); err != nil {
				return err
			}
			if m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind") {
				if !slices.Contains(m.Options, "bind") && !slices.Contains(m.Options, "rbind") {
					return fmt.Errorf("bind mount of %s: options need \"rbind\" or \"bind\"", m.Destination)
				}
				if err := checkAbs("bind mount source", m.Source); err != nil {
					return err
				}
			}
			s.Mounts = append(s.Mounts, m)
		}
		sortMounts(s.Mounts)
		return nil
	}
}

// sortMounts orders mounts by destination depth, keeping the given order
// among mounts of equal depth, so parents are mounted before children.
func sortMounts(ms []specs.Mount) {
	sort.SliceStable(ms, func(i, j int) bool {
		return pathDepth(ms[i].Destination) < pathDepth(ms[j].Destination)
	})
}

func pathDepth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// WithMasks hides paths: libcontainer mounts a read-only empty tmpfs over
// a directory and binds /dev/null over a file. A path that does not exist
// when the container starts is skipped. Duplicates are dropped.
func WithMasks(paths ...string) Opt {
	return func(s *specs.Spec) error {
		l := ensureLinux(s)
		for _, p := range paths {
			if err := checkAbs("masked path", p); err != nil {
				return err
			}
			if !slices.Contains(l.MaskedPaths, p) {
				l.MaskedPaths = append(l.MaskedPaths, p)
			}
		}
		return nil
	}
}

// WithReadonlyPaths makes paths read-only: once every mount is in place,
// libcontainer binds each path onto itself (recursively) and remounts that
// bind read-only. A path that does not exist when the container starts is
// skipped. Duplicates are dropped.
func WithReadonlyPaths(paths ...string) Opt {
	return func(s *specs.Spec) error {
		l := ensureLinux(s)
		for _, p := range paths {
			if err := checkAbs("read-only path", p); err != nil {
				return err
			}
			if !slices.Contains(l.ReadonlyPaths, p) {
				l.ReadonlyPaths = append(l.ReadonlyPaths, p)
			}
		}
		return nil
	}
}

// WithRootfsPropagation sets the propagation of the container's mounts
// ("rprivate", "rslave", ...).
func WithRootfsPropagation(p string) Opt {
	return func(s *specs.Spec) error {
		ensureLinux(s).RootfsPropagation = p
		return nil
	}
}

// WithDefaultDevices lists no device nodes and installs a deny-all device
// cgroup rule. libcontainer then creates exactly /dev/null, /dev/zero,
// /dev/full, /dev/random, /dev/urandom and /dev/tty (specconv's
// AllowedDevices) and appends their allow rules after the deny-all one, so
// listing those six here would only duplicate them.
func WithDefaultDevices() Opt {
	return func(s *specs.Spec) error {
		ensureLinux(s).Devices = nil
		r := ensureResources(s)
		r.Devices = []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}
		return nil
	}
}

// CPU quota constants: the quota is CPUs × cpuPeriod microseconds per
// period; the kernel refuses a quota below cpuMinQuota.
const (
	cpuPeriod   = 100000
	cpuMinQuota = 1000
)

// File-descriptor rlimits: the soft limit stays at 1024 so select(2) users
// keep working; the hard limit leaves room for tools that raise it (the Go
// runtime does so on its own) and stays at or below the default hard limit
// of common distributions, which a rootless run cannot exceed.
const (
	nofileSoft = 1024
	nofileHard = 4096
)

// WithLimits turns l into cgroup resources and rlimits: memory with an equal
// memory+swap limit (so swap is no escape), pids, a CPU quota per 100 ms
// period, RLIMIT_FSIZE from FileSize, RLIMIT_NOFILE 1024/4096 and
// RLIMIT_CORE 0. Timeout and Output are enforced by the runner, not here.
func WithLimits(l Limits) Opt {
	return func(s *specs.Spec) error {
		r := ensureResources(s)
		if l.Memory > 0 {
			m := l.Memory
			swap := l.Memory
			r.Memory = &specs.LinuxMemory{Limit: &m, Swap: &swap}
		}
		if l.Pids > 0 {
			p := l.Pids
			r.Pids = &specs.LinuxPids{Limit: &p}
		}
		if l.CPUs > 0 {
			quota := int64(math.Round(l.CPUs * cpuPeriod))
			if quota < cpuMinQuota {
				return fmt.Errorf("cpus %g is below the smallest enforceable quota (%g): %w",
					l.CPUs, float64(cpuMinQuota)/cpuPeriod, ErrUnenforceable)
			}
			period := uint64(cpuPeriod)
			r.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		}
		p := ensureProcess(s)
		rl := []specs.POSIXRlimit{{Type: "RLIMIT_CORE", Hard: 0, Soft: 0}}
		if l.FileSize > 0 {
			rl = append(rl, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Hard: uint64(l.FileSize), Soft: uint64(l.FileSize)})
		}
		rl = append(rl, specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: nofileHard, Soft: nofileSoft})
		p.Rlimits = mergeRlimits(p.Rlimits, rl)
		return nil
	}
}

// mergeRlimits replaces entries of old by type with those of add and keeps
// the result sorted by type.
func mergeRlimits(old, add []specs.POSIXRlimit) []specs.POSIXRlimit {
	byType := map[string]specs.POSIXRlimit{}
	for _, r := range old {
		byType[r.Type] = r
	}
	for _, r := range add {
		byType[r.Type] = r
	}
	out := make([]specs.POSIXRlimit, 0, len(byType))
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		out = append(out, byType[t])
	}
	return out
}

// WithProcess sets the process: args, cwd, env, user and terminal, with
// no_new_privs always on. It leaves rlimits and capabilities to their own
// options. Args must not be empty and Cwd must be absolute.
func WithProcess(proc Process) Opt {
	return func(s *specs.Spec) error {
		if len(proc.Args) == 0 {
			return fmt.Errorf("process: no command to run (args are empty)")
		}
		if err := checkAbs("process cwd", proc.Cwd); err != nil {
			return err
		}
		p := ensureProcess(s)
		p.Args = slices.Clone(proc.Args)
		p.Cwd = proc.Cwd
		p.Env = slices.Clone(proc.Env)
		p.User = specs.User{UID: proc.UID, GID: proc.GID, AdditionalGids: slices.Clone(proc.AdditionalGids)}
		p.Terminal = proc.Terminal
		p.NoNewPrivileges = true
		return nil
	}
}

// WithCapabilities gives the process exactly caps in its bounding,
// effective and permitted sets, and none inheritable or ambient. With no
// argument every set is empty: the capabilities object is still present,
// because libcontainer leaves capabilities untouched when it is missing.
func WithCapabilities(caps ...string) Opt {
	return func(s *specs.Spec) error {
		c := append([]string{}, caps...)
		ensureProcess(s).Capabilities = &specs.LinuxCapabilities{
			Bounding:    c,
			Effective:   slices.Clone(c),
			Permitted:   slices.Clone(c),
			Inheritable: []string{},
			Ambient:     []string{},
		}
		return nil
	}
}

// WithSeccomp sets the seccomp filter; nil removes it.
func WithSeccomp(profile *specs.LinuxSeccomp) Opt {
	return func(s *specs.Spec) error {
		ensureLinux(s).Seccomp = profile
		return nil
	}
}

// WithCgroupsPath sets linux.cgroupsPath; "" leaves it unset, so the
// runtime picks the cgroup.
func WithCgroupsPath(p string) Opt {
	return func(s *specs.Spec) error {
		ensureLinux(s).CgroupsPath = p
		return nil
	}
}

// WithAnnotations merges a into the spec's annotations.
func WithAnnotations(a map[string]string) Opt {
	return func(s *specs.Spec) error {
		if len(a) == 0 {
			return nil
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		maps.Copy(s.Annotations, a)
		return nil
	}
}

func checkAbs(what, p string) error {
	if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.ContainsRune(p, 0) {
		return fmt.Errorf("%s %q must be an absolute, clean path", what, p)
	}
	return nil
}
