package runner

import (
	"os"
	"runtime"

	"github.com/cordon-run/cordon/spec"
)

// Plan decides what Linux backend b builds of sb on a host with facts h
// and translates it, in one call: the table of what b cannot enforce refuses those parts, or, when
// the sandbox allows degradation, drops them (narrower, never wider); the
// sandbox that is left becomes the spec. The Enforcement says what was
// dropped, for the warnings and Result.Unenforced. Runs and `cordon spec`
// both call it, so the printed spec is the one a run would use.
func Plan(b Backend, sb *spec.Sandbox, proc spec.Process, ro spec.RunOptions, h HostFacts) (*spec.Plan, Enforcement, error) {
	enf := Enforce(b, sb, h)
	if err := enf.Err(); err != nil {
		return nil, enf, err
	}
	ro.Unenforced = enf.UnenforcedKeys()
	p, err := spec.NewPlan(enf.Sandbox, proc, ro)
	return p, enf, err
}

// LocalBackend is the backend a run on this machine uses: Seatbelt on
// macOS, else the Linux backend of this user (rootless unless root).
func LocalBackend() Backend {
	if runtime.GOOS == "darwin" {
		return BackendSeatbelt
	}
	return linuxBackend()
}

// linuxBackend is the Linux backend this user runs: rootless unless root.
func linuxBackend() Backend {
	if os.Geteuid() != 0 {
		return BackendRootless
	}
	return BackendLibcontainer
}

// RunOptions are the RunOptions of run id of backend b on a host with
// facts h, whose root is the empty directory rootfs.
func RunOptions(b Backend, id, rootfs string, h HostFacts) spec.RunOptions {
	host := h.KernelHost()
	ro := spec.RunOptions{
		Rootfs:   rootfs,
		Rootless: b == BackendRootless,
		HostUID:  uint32(os.Getuid()),
		HostGID:  uint32(os.Getgid()),
		Hostname: spec.DefaultHostname,
		Host:     &host,
	}
	if !ro.Rootless {
		ro.CgroupsPath = "/cordon/" + id
	}
	ro.NetworkGuarded = b != BackendSeatbelt && guardAvailable(b, h)
	return ro
}

// Process is the command of a run as this user, in cwd.
func Process(args []string, cwd string, tty bool) spec.Process {
	return spec.Process{Args: args, Cwd: cwd, UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Terminal: tty}
}

// SpecPlan is the plan `cordon spec` prints for a run of args in sb: the
// same Plan a run by this user on this host would use (its Linux backend,
// the facts h of this host), with "ID" standing for the run's id.
func SpecPlan(sb *spec.Sandbox, args []string, h HostFacts) (*spec.Plan, Enforcement, error) {
	cwd := "/"
	if sb != nil && sb.Root != "" {
		cwd = sb.Root
	}
	b := linuxBackend()
	ro := RunOptions(b, "ID", "/run/cordon/runs/ID/rootfs", h)
	if b == BackendRootless && sb != nil {
		ro.CgroupsPath = RootlessCgroupsPath(sb, "ID", h)
	}
	return Plan(b, sb, Process(args, cwd, false), ro, h)
}
