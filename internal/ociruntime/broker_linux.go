package ociruntime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/broker"
)

// A container with deny, protect or audit annotations runs under cordon's
// broker, as `cordon run` does: its seccomp profile notifies the calls
// that create, remove, rename, link or open a path for writing, and
// libcontainer sends the notification descriptor of each process it starts
// (the init and every exec) to listenerPath; create takes the init's and
// hands it over (handoff_linux.go) to a per-container supervisor
// (cordon-oci __broker, supervisor_linux.go), which serves each with
// internal/broker and writes each refusal, typed, to the runtime log and
// the audit log. A container with an allow list has the same supervisor
// for its network guard (network_linux.go); with the allow list alone it
// has no broker: no listener, its profile as the spec gives it, and create
// hands the supervisor a pidfd of the init and the guard's device only,
// starting it once it has (guardonly_linux.go).
// The supervisor ends with the container's init; delete ends it too and
// removes its socket.

const (
	brokerPidFile = "cordon-broker.pid"
	brokerRole    = "__broker"
	// maxSocketPath is the room in sockaddr_un.sun_path, without its NUL.
	maxSocketPath = 107
)

// brokerConfig is what create hands the supervisor.
type brokerConfig struct {
	ID      string       `json:"id"`
	Deny    []string     `json:"deny,omitempty"`
	Protect []string     `json:"protect,omitempty"`
	Allow   []string     `json:"allow,omitempty"`
	Audit   string       `json:"audit,omitempty"`
	Creds   broker.Creds `json:"creds"`
	Command []string     `json:"command,omitempty"`
}

// needsSupervisor reports whether b needs a supervisor: the broker's (deny,
// protect, audit) or the network guard's (an allow list).
func needsSupervisor(b Boundary) bool {
	return brokered(b) || len(b.Allow) > 0
}

// brokered reports whether b needs the broker and its filter: deny,
// protect and audit decide (or record) the container's path-changing
// calls. An allow list alone does not: the guard stands in front of the
// container's network namespace and sees its packets, never its calls, so
// such a container keeps its seccomp profile exactly as the spec gives it
// (TestOCIAllowListUnbrokered).
func brokered(b Boundary) bool {
	return len(b.Deny) > 0 || len(b.Protect) > 0 || b.Audit != ""
}

// brokerSocketPath is the listener path of container id: beside the
// state directories (list reads directories only), named by a digest of
// the id, since a socket's path is short and ids are long (podman's and
// containerd's are 64 characters).
func brokerSocketPath(g *globals, id string) (string, error) {
	sum := sha256.Sum256([]byte(id))
	p := filepath.Join(g.root, ".cordon-broker-"+hex.EncodeToString(sum[:8])+".sock")
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("%w: the broker's socket %s is longer than a unix socket path may be (%d bytes); fix: give a shorter --root", ErrUnsupported, p, maxSocketPath)
	}
	return p, nil
}

// brokerSeccomp is c (nil: no profile, everything allowed) with the
// broker's calls notified to sock. A call the profile refuses stays
// refused (the broker would perform it); a call it allows only with
// conditions on its arguments is refused here, since notifying it would
// drop them.
func brokerSeccomp(c *configs.Seccomp, sock string) (*configs.Seccomp, error) {
	if c == nil {
		c = &configs.Seccomp{DefaultAction: configs.Allow}
	}
	var kept []string
	for _, n := range broker.Syscalls() {
		allowed, err := allowedOutright(c, n)
		if err != nil {
			return nil, err
		}
		if !allowed {
			kept = append(kept, n)
		}
	}
	out := backend.BrokeredSeccomp(c)
	if len(kept) > 0 {
		var rules []*configs.Syscall
		for _, s := range out.Syscalls {
			if s == nil || !slices.Contains(kept, s.Name) {
				rules = append(rules, s)
			}
		}
		for _, s := range c.Syscalls {
			if s != nil && slices.Contains(kept, s.Name) {
				rules = append(rules, s)
			}
		}
		out.Syscalls = rules
	}
	out.Syscalls = slices.DeleteFunc(out.Syscalls, func(s *configs.Syscall) bool { return s != nil && slices.Contains(unbrokered, s.Name) })
	enosys := uint(unix.ENOSYS)
	for _, n := range unbrokered {
		out.Syscalls = append(out.Syscalls, &configs.Syscall{Name: n, Action: configs.Errno, ErrnoRet: &enosys})
	}
	// The backend's filter refuses a listener of the container's own
	// (TestOCINoListenerOfItsOwn) where the profile allows seccomp(2)
	// outright; one that allows it only under conditions is refused here.
	if _, err := allowedOutright(c, "seccomp"); err != nil {
		return nil, err
	}
	out.ListenerPath = sock
	return out, nil
}

// unbrokered are calls that would open or change paths past the broker,
// which fail with ENOSYS under it (as cordon run's profile has them):
// openat2 carries its flags in a struct the filter cannot read (a caller
// falls back to openat), io_uring performs opens without system calls,
// and open_by_handle_at (which podman's and Docker's profiles allow a
// container with CAP_DAC_READ_SEARCH) opens a file by its handle, not its
// path, on the mount it is given: a protected file, for writing, through
// the container's root mount, past its read-only bind
// (TestOCIOpenByHandleRefused).
var unbrokered = []string{"openat2", "io_uring_setup", "io_uring_enter", "io_uring_register", "open_by_handle_at"}

// allowedOutright says whether the profile c allows the call name with no
// condition (true) or refuses it outright (false).
func allowedOutright(c *configs.Seccomp, name string) (bool, error) {
	allows := func(a configs.Action) bool { return a == configs.Allow || a == configs.Log }
	var rules []*configs.Syscall
	for _, s := range c.Syscalls {
		if s != nil && s.Name == name {
			rules = append(rules, s)
		}
	}
	if len(rules) == 0 {
		return allows(c.DefaultAction), nil
	}
	conditional, anyAllow, plainAllow := false, allows(c.DefaultAction), false
	for _, s := range rules {
		conditional = conditional || len(s.Args) > 0
		anyAllow = anyAllow || allows(s.Action)
		plainAllow = plainAllow || (allows(s.Action) && len(s.Args) == 0)
	}
	switch {
	case !conditional:
		return plainAllow, nil
	case !anyAllow:
		return false, nil
	}
	return false, fmt.Errorf("%w: the container's seccomp profile allows %s only under conditions on its arguments, and cordon's broker (which the run.cordon annotations need) decides every %s itself; fix: allow or refuse %s outright in the profile, or leave the run.cordon annotations out",
		ErrUnsupported, name, name, name)
}

// brokerCreds are the ids the broker acts with: the container process's
// user, as ids of the runtime's own user namespace. A runtime that cannot
// switch ids (a user's, or root of a user namespace where setgroups is
// denied: rootless podman with one id mapped, where the container can only
// be that id) has the broker act as itself, as a rootless `cordon run` does.
func brokerCreds(s *specs.Spec) (broker.Creds, error) {
	if s.Process == nil || os.Geteuid() != 0 || setgroupsDenied() {
		return broker.Creds{}, nil
	}
	u := s.Process.User
	var uidMap, gidMap []specs.LinuxIDMapping
	if s.Linux != nil && slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace }) {
		uidMap, gidMap = s.Linux.UIDMappings, s.Linux.GIDMappings
	}
	c := broker.Creds{Set: true}
	var err error
	if c.UID, err = hostID(uidMap, u.UID, "uid"); err != nil {
		return c, err
	}
	if c.GID, err = hostID(gidMap, u.GID, "gid"); err != nil {
		return c, err
	}
	for _, g := range u.AdditionalGids {
		h, err := hostID(gidMap, g, "gid")
		if err != nil {
			return c, err
		}
		c.Groups = append(c.Groups, h)
	}
	return c, nil
}

// setgroupsDenied reports whether this user namespace refuses setgroups.
func setgroupsDenied() bool {
	b, err := os.ReadFile("/proc/self/setgroups")
	return err == nil && strings.TrimSpace(string(b)) == "deny"
}

// hostID maps a container id through m (none: the same id).
func hostID(m []specs.LinuxIDMapping, id uint32, kind string) (int, error) {
	if m == nil {
		return int(id), nil
	}
	for _, e := range m {
		if id >= e.ContainerID && id-e.ContainerID < e.Size {
			return int(e.HostID + id - e.ContainerID), nil
		}
	}
	return -1, fmt.Errorf("%w: the process's %s %d is not mapped by the spec's user namespace; fix: map it in linux.%sMappings", ErrUsage, kind, id, kind)
}

// startBroker binds the listener socket of the container and starts the
// supervisor, before the container is created. create does not wait for
// the supervisor: the gate it returns (handoff_linux.go) takes the init's
// descriptor, lets the init's last call through and hands the container
// over, while the supervisor starts. stop ends the supervisor once the container is
// destroyed.
func startBroker(g *globals, sock string, cfg brokerConfig) (pid int, gt *gate, stop func(), err error) {
	// The state root, as libcontainer.Create makes it.
	if err := os.MkdirAll(g.root, 0o700); err != nil {
		return 0, nil, nil, fmt.Errorf("the state root: %w", err)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil, fmt.Errorf("the broker's socket: %w", err)
	}
	// 0600 from the bind, not after it: a state root others may enter
	// (containerd's is 0711) gives them no moment to connect first.
	old := unix.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	unix.Umask(old)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("the broker's socket: %w", err)
	}
	l.SetUnlinkOnClose(false)
	removeSocket := func() { _ = os.Remove(sock) }
	fail := func(err error) (int, *gate, func(), error) {
		l.Close()
		removeSocket()
		return 0, nil, nil, err
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		return fail(fmt.Errorf("the broker's socket: %w", err))
	}
	mine, theirs, err := handoffPair()
	if err != nil {
		return fail(err)
	}
	pid, err = spawnBroker(g, theirs, cfg)
	theirs.Close()
	if err != nil {
		mine.Close()
		return fail(err)
	}
	return pid, newGate(cfg, l, mine), stopper(pid, removeSocket), nil
}

// handoffPair is the handoff socket's two ends: create's and the
// supervisor's.
func handoffPair() (mine, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("the broker's handoff socket: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "handoff"), os.NewFile(uintptr(fds[1]), "handoff"), nil
}

// spawnBroker starts the supervisor, with the handoff socket as its fd 3.
func spawnBroker(g *globals, hand *os.File, cfg brokerConfig) (int, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return 0, fmt.Errorf("the broker's config: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find cordon-oci's own binary: %w", err)
	}
	args := []string{"--root", g.root, "--log-format", g.logFormat}
	if g.log != "" {
		args = append(args, "--log", g.log)
	}
	if g.debug {
		args = append(args, "--debug")
	}
	cmd := exec.Command(exe, append(args, brokerRole, string(data))...)
	cmd.Args[0] = "cordon-oci"
	cmd.ExtraFiles = []*os.File{hand}
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start the broker: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, nil
}

// stopBrokerOf returns what ends the supervisor of container id (its pid
// is in the state directory) once the container is gone; see stopper.
// Call it before the state directory is removed; the function it returns
// after.
func stopBrokerOf(g *globals, id string) func() {
	removeSocket := func() {
		if sock, err := brokerSocketPath(g, id); err == nil {
			_ = os.Remove(sock)
		}
	}
	data, err := os.ReadFile(filepath.Join(g.root, id, brokerPidFile))
	if err != nil {
		return removeSocket
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil || pid <= 0 {
		return removeSocket
	}
	return stopper(pid, removeSocket)
}

// stopper returns what ends the supervisor pid: it is told to stop
// (SIGTERM: it flushes and exits) and waited for, then killed; then
// cleanup runs. The process is held by a pidfd from now, so a reused pid
// is never signalled.
func stopper(pid int, cleanup func()) func() {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return cleanup // gone already
	}
	if !isBroker(pid) {
		unix.Close(pidfd)
		return cleanup
	}
	return func() {
		defer cleanup()
		defer unix.Close(pidfd)
		_ = unix.PidfdSendSignal(pidfd, unix.SIGTERM, nil, 0)
		if waitPidfd(pidfd, 10*time.Second) {
			return
		}
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		waitPidfd(pidfd, 10*time.Second)
	}
}

// supervisorServes refuses to start container id when it has a supervisor
// (its pid is in the state directory) that is no longer running: killed
// or failed after create. Its command would run with every brokered call
// failing (ENOSYS) and no network, the boundary held but the container
// broken, so start fails with the reason instead
// (TestOCIStartWithoutSupervisor). A container without annotations has no
// supervisor.
func supervisorServes(g *globals, id string) error {
	data, err := os.ReadFile(filepath.Join(g.root, id, brokerPidFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	pid, perr := strconv.Atoi(string(data))
	if err == nil && perr == nil && pid > 0 && supervises(pid, id) {
		return nil
	}
	return fmt.Errorf("%w: container %s: its supervisor (cordon-oci %s, which enforces the run.cordon annotations) ended after create (killed, or see its error above in the runtime log); fix: delete the container and create it again", ErrSupervisorGone, id, brokerRole)
}

// supervises reports whether pid runs the supervisor of container id.
func supervises(pid int, id string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := splitNUL(data)
	i := slices.Index(args, brokerRole)
	var cfg brokerConfig
	return i >= 0 && i+1 < len(args) && json.Unmarshal([]byte(args[i+1]), &cfg) == nil && cfg.ID == id
}

// isBroker reports whether pid runs the supervisor role.
func isBroker(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && slices.Contains(splitNUL(data), brokerRole)
}

func splitNUL(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return out
}

// waitPidfd waits up to d for the process to exit.
func waitPidfd(pidfd int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		if n > 0 {
			return true
		}
	}
}

// supervised is a brokered container's supervisor, from create's side.
type supervised struct {
	gate *gate  // hands the container over (see handoff_linux.go)
	stop func() // ends the supervisor once the container is destroyed
}

// createSupervised starts the container's supervisor and makes the
// container, with the broker's filter where b is brokered (else with the
// spec's profile as it is). The audit log's start record is written
// first, so that a log that cannot be written fails create.
func createSupervised(g *globals, id string, s *specs.Spec, cfg *configs.Config, b Boundary) (*libcontainer.Container, *supervised, error) {
	var sock string
	if brokered(b) {
		var err error
		if sock, err = brokerSocketPath(g, id); err != nil {
			return nil, nil, err
		}
		if cfg.Seccomp, err = brokerSeccomp(cfg.Seccomp, sock); err != nil {
			return nil, nil, err
		}
	}
	creds, err := brokerCreds(s)
	if err != nil {
		return nil, nil, err
	}
	bc := brokerConfig{ID: id, Deny: b.Deny, Protect: b.Protect, Allow: b.Allow, Audit: b.Audit, Creds: creds}
	if s.Process != nil {
		bc.Command = s.Process.Args
	}
	if sock == "" {
		return createGuarded(g, id, cfg, bc)
	}
	if b.Audit != "" {
		if err := checkAuditPath(g.auditDir, b.Audit); err != nil {
			return nil, nil, err
		}
		if err := audit.New("oci", b.Audit).Append(audit.Record{Event: audit.EventStart, RunID: id, Command: bc.Command}); err != nil {
			return nil, nil, &AnnotationError{Annotation: AnnotationAudit, Problem: fmt.Sprintf("the audit log cannot be written: %v", err),
				Fix: "give a host path whose folder exists and is writable by the runtime", Err: err}
		}
	}
	pid, gt, stop, err := startBroker(g, sock, bc)
	if err != nil {
		return nil, nil, err
	}
	c, err := libcontainer.Create(g.root, id, cfg)
	if err != nil {
		gt.cancel()
		stop()
		return nil, nil, err
	}
	gt.watch(filepath.Join(g.root, id))
	if err := os.WriteFile(filepath.Join(g.root, id, brokerPidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		_ = c.Destroy()
		gt.cancel()
		stop()
		return nil, nil, fmt.Errorf("record the broker: %w", err)
	}
	return c, &supervised{gate: gt, stop: stop}, nil
}
