package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/cgroups"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/seccomp"
)

// Doctor reports what this host can enforce: whether cordon runs as root,
// user namespaces, the cgroup version and delegation, seccomp, recursive
// read-only mounts and the sealed-binary protection of /proc/self/exe.
func Doctor() []runner.Capability {
	f := Facts()
	var caps []runner.Capability
	if data, err := os.ReadFile("/proc/1/cmdline"); err == nil {
		if init := nestedIn(data); init != "" {
			caps = append(caps, runner.Capability{Name: "nested", OK: true, Detail: "this doctor runs inside a cordon sandbox (its PID 1 is cordon's " + init +
				"): what follows is what a sandbox nested in this one would get, not what the host offers; run cordon doctor on the host for that", Required: false})
		}
	}
	root := os.Geteuid() == 0
	caps = append(caps, runner.Capability{Name: "root", OK: root, Detail: map[bool]string{
		true:  "running as root: cgroup limits are enforced; the command still runs with no capabilities and no_new_privs",
		false: fmt.Sprintf("running as uid %d: rootless mode in a user namespace", os.Geteuid()),
	}[root], Required: false})
	if !root {
		caps = append(caps, rootlessLimitsCap(f.RootlessDelegation()))
	}
	userns := userNamespacesAvailable()
	caps = append(caps, runner.Capability{Name: "user namespaces", OK: userns, Required: !root, Detail: map[bool]string{
		true:  "unprivileged user namespaces are enabled",
		false: "disabled (user.max_user_namespaces=0 or kernel.unprivileged_userns_clone=0): rootless runs are refused; run as root or enable them (sysctl user.max_user_namespaces=15000)",
	}[userns]})
	switch {
	case cgroups.IsCgroup2UnifiedMode():
		caps = append(caps, runner.Capability{Name: "cgroups", OK: true, Detail: "cgroup v2 (unified)", Required: false})
	default:
		detail := "cgroup v1"
		if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
			detail += " with a cgroup2 mount at /sys/fs/cgroup/unified (hybrid)"
		}
		var missing []string
		for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
				missing = append(missing, c)
			}
		}
		ok := len(missing) == 0
		if !ok {
			detail += "; missing controllers: " + strings.Join(missing, ", ")
		}
		caps = append(caps, runner.Capability{Name: "cgroups", OK: ok, Detail: detail, Required: false})
	}
	ok, detail := seccomp.Support()
	if !seccompKernel() {
		ok, detail = false, "the kernel has no seccomp (no Seccomp: line in /proc/self/status): every run fails closed"
	}
	caps = append(caps, runner.Capability{Name: "seccomp", OK: ok, Required: true, Detail: detail})
	rro := kernelFacts().recursiveRO
	caps = append(caps, runner.Capability{Name: "recursive read-only mounts", OK: rro, Detail: map[bool]string{
		true:  "mount_setattr(MOUNT_ATTR_RDONLY, AT_RECURSIVE) available (kernel >= 5.12): read-only mounts cover their submounts",
		false: "kernel older than 5.12: read-only mounts with submounts are refused",
	}[rro], Required: false})
	// Rootless, libcontainer cannot mount the overlay and falls back to
	// the memfd copy, as the README says.
	ovl := fsSupported("overlay") && root
	caps = append(caps, runner.Capability{Name: "sealed /proc/self/exe", OK: true, Detail: map[bool]string{
		true:  "overlayfs available: libcontainer runs its init from a sealed overlay of the binary",
		false: "libcontainer copies the binary to a sealed memfd for each run (no overlayfs, or rootless; slower)",
	}[ovl], Required: false})
	caps = append(caps, networkGuardCap(f))
	return append(caps, runner.LimitationCaps(runner.LocalBackend(), f)...)
}

// networkGuardCap says whether network allow lists are enforced on host f.
func networkGuardCap(f runner.HostFacts) runner.Capability {
	ok, why := f.NetworkGuard()
	if ok {
		return runner.Capability{Name: "network allow lists", OK: true, Detail: "enforced: a tun device in each sandbox's network namespace, and cordon's own TCP/IP stack deciding every DNS question and TCP connection; other UDP and ICMP are refused", Required: false}
	}
	return runner.Capability{Name: "network allow lists", OK: false, Detail: why + ": allow lists are refused (or the network is off with require_os_sandbox: false)", Required: false}
}

// rootlessLimitsCap says which way this host offers a rootless user
// memory, pids and cpu limits: a delegated cgroup v2 subtree, or none.
func rootlessLimitsCap(d runner.Delegation) runner.Capability {
	want := []string{"memory", "pids", "cpu"}
	ok, why := d.Enforces(want)
	switch {
	case ok && d.Systemd:
		return runner.Capability{Name: "rootless limits", OK: true, Detail: "the user's systemd (cgroup " + d.Base + ", controllers: " + strings.Join(d.Controllers, " ") +
			") answers on the user's D-Bus: memory, pids and cpus limits are enforced in a delegated scope " + runner.SystemdScopeSlice + "/cordon-<id>.scope it creates per run", Required: false}
	case ok:
		return runner.Capability{Name: "rootless limits", OK: true, Detail: "delegated cgroup " + d.Base + " (controllers: " + strings.Join(d.Controllers, " ") +
			"): memory, pids and cpus limits are enforced in a child cgroup per run; its processes move into " + d.Base + "/" + cgroup.LeafCgroup + " when the controllers are first enabled", Required: false}
	case d.Base != "" && len(d.MissingControllers(want)) < len(want):
		return runner.Capability{Name: "rootless limits", OK: false, Detail: "partly: " + why, Required: false}
	}
	return runner.Capability{Name: "rootless limits", OK: false, Detail: why + "; memory, pids and cpus limits are refused (or dropped with require_os_sandbox: false); " + d.Fix(), Required: false}
}

func seccompKernel() bool {
	data, err := os.ReadFile("/proc/self/status")
	return err == nil && strings.Contains(string(data), "Seccomp:")
}

func fsSupported(name string) bool {
	data, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == name {
			return true
		}
	}
	return false
}

// nestedIn returns the init argument of cordon's PID 1 ("cordon-sandbox-init"
// or "cordon-session-init") when cmdline, /proc/1/cmdline, is one: this
// process runs inside a cordon sandbox. It returns "" otherwise.
func nestedIn(cmdline []byte) string {
	args := strings.Split(string(cmdline), "\x00")
	if len(args) > 1 && (args[1] == sandboxInitArg || args[1] == "cordon-session-init") {
		return args[1]
	}
	return ""
}
