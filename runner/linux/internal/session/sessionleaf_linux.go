package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
	"github.com/cordon-run/cordon/runner/linux/internal/pid1"
	"github.com/cordon-run/cordon/spec"
)

// Per-exec cgroups (cgroup v2). Once the session is ready its cgroup P
// holds no process: the fork server and its idle shims live in P/init,
// and each exec runs in a leaf P/x<id> of its own, made by the supervisor.
// The shim moves itself into the leaf (a write of "0" to the leaf's
// cgroup.procs, opened here and passed with the request) before it spawns
// the command, and back into P/init once the command's tree is dead, so
// the command and everything it forks are charged to the leaf and an OOM
// kill of any of them is counted in the leaf's memory.events: typed for
// that exec alone, whatever runs beside it. The session's limits stay on
// P, over every leaf. The sandbox mounts no cgroupfs, and the shim is not
// dumpable (sessioninit_linux.c), so a command can neither ptrace it nor
// open its descriptors through /proc/PID/fd: it has no way to move itself
// out of its leaf.
//
// On cgroup v1, and when P has no memory controller to give its
// children, there are no leaves: memory and its OOM counter are the
// session's, as the report says.

const (
	leafHome   = "init"
	leafPrefix = "x"
)

// sessionLeaves is the session's per-exec cgroup state; its zero value
// means none (v1, or set-up refused).
type sessionLeaves struct {
	dir  string   // P, the container's cgroup
	home *os.File // P/init/cgroup.procs, opened for writing
}

// setupLeaves moves every process of the session's cgroup into P/init and
// gives P's children the memory and pids controllers. Called once the
// fork server is ready, before any shim is forked. Any failure leaves the
// session with session-wide accounting, which is logged, not fatal.
func (s *linuxSession) setupLeaves() {
	if !cgroups.IsCgroup2UnifiedMode() || s.eff.Limits.Memory <= 0 {
		return
	}
	st, err := s.container.State()
	if err != nil || st.CgroupPaths[""] == "" {
		return
	}
	dir := st.CgroupPaths[""]
	if err := prepareLeaves(dir); err != nil {
		logrus.WithField("session", s.id).Debugf("per-exec cgroups off, memory is session-wide: %v", err)
		return
	}
	home, err := os.OpenFile(filepath.Join(dir, leafHome, "cgroup.procs"), os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		logrus.WithField("session", s.id).Debugf("per-exec cgroups off: %v", err)
		return
	}
	s.leaves = sessionLeaves{dir: dir, home: home}
}

// prepareLeaves makes dir/init, moves dir's processes into it, and
// enables memory (and pids, when dir has it) for dir's children.
func prepareLeaves(dir string) error {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(avail))
	if !slices.Contains(have, "memory") {
		return errors.New("no memory controller in the session's cgroup")
	}
	if err := os.Mkdir(filepath.Join(dir, leafHome), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, pid := range strings.Fields(string(procs)) {
		if err := os.WriteFile(filepath.Join(dir, leafHome, "cgroup.procs"), []byte(pid), 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("move %s into %s: %w", pid, leafHome, err)
		}
	}
	on := "+memory"
	if slices.Contains(have, "pids") {
		on += " +pids"
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(on), 0)
}

// execLeaf makes exec id's leaf and returns its path and the descriptors
// the shim needs (the leaf's cgroup.procs, then P/init's), or "" and nil
// when the session has no leaves or the leaf cannot be made (the exec then
// runs in P/init, with session-wide typing). The caller closes the first
// descriptor once the request is sent; the second is the session's.
func (s *linuxSession) execLeaf(id uint64) (string, *os.File) {
	if s.leaves.home == nil {
		return "", nil
	}
	dir := filepath.Join(s.leaves.dir, leafPrefix+strconv.FormatUint(id, 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		logrus.WithField("session", s.id).Debugf("exec %d runs without its own cgroup: %v", id, err)
		return "", nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return "", nil
	}
	return dir, f
}

// leafOOMKills is the oom_kill counter of an exec's leaf.
func leafOOMKills(dir string) int64 {
	return cgroup.Counter(filepath.Join(dir, "memory.events"), "oom_kill")
}

// removeLeaf removes an exec's leaf once its last process is gone: the
// killed tree and the shim's move back take a moment, so it retries in
// the background for a while. What is left then (a detached process) is
// removed with the session's cgroup.
func removeLeaf(dir string) {
	if dir == "" {
		return
	}
	if unix.Rmdir(dir) == nil {
		return
	}
	go func() {
		for i := 0; i < 100; i++ {
			time.Sleep(10 * time.Millisecond)
			if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
				return
			}
		}
	}()
}

// takeLeaf makes x's leaf, records it in x and sets protoFlagCgroup in
// flags; it returns the leaf's cgroup.procs (closed by the caller once the
// request is sent), or nil when x runs without a leaf. memory, when above
// zero, is the exec's own limit (ExecRequest.Memory): refused when it
// would widen the session's limit or when the exec gets no leaf to hold
// it, since the command would then run without it.
func (s *linuxSession) takeLeaf(x *sessionExec, flags *uint32, memory int64) (*os.File, error) {
	if memory > 0 {
		if s.leaves.home == nil {
			why := "this machine has cgroup v1, where a session's memory is shared by its commands"
			if cgroups.IsCgroup2UnifiedMode() {
				why = "the session has no memory limit (or no cgroup of its own), so its commands get no cgroup each"
			}
			return nil, fmt.Errorf("%w: a memory limit for one exec (--memory %s) needs a cgroup per exec, and %s; fix: drop --memory, or start the session with --memory on a cgroup v2 machine", runner.ErrBadRequest, spec.FormatBytes(memory), why)
		}
		if memory > s.eff.Limits.Memory {
			return nil, fmt.Errorf("%w: --memory %s is above the session's memory limit of %s, which a command cannot widen; fix: give at most %s", runner.ErrBadRequest, spec.FormatBytes(memory), spec.FormatBytes(s.eff.Limits.Memory), spec.FormatBytes(s.eff.Limits.Memory))
		}
	}
	dir, f := s.execLeaf(x.id)
	if f == nil {
		if memory > 0 {
			return nil, fmt.Errorf("%w: the exec's cgroup, which would hold its memory limit, could not be made", runner.ErrSetup)
		}
		return nil, nil
	}
	x.leaf = dir
	if memory > 0 {
		if err := limitLeaf(dir, memory); err != nil {
			f.Close()
			return nil, fmt.Errorf("%w: the exec's memory limit: %w", runner.ErrSetup, err)
		}
		x.memory = memory
	}
	*flags |= pid1.ProtoFlagCgroup
	return f, nil
}

// limitLeaf sets an exec's memory limit on its leaf, with no swap beyond
// it (the session's own limit is set so too).
func limitLeaf(dir string, memory int64) error {
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(memory, 10)), 0); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// leafFDs appends the leaf's descriptors to an EXEC request's: the leaf's
// cgroup.procs, then the shims' home.
func (s *linuxSession) leafFDs(fds []int, leaf *os.File) []int {
	if leaf == nil {
		return fds
	}
	return append(fds, int(leaf.Fd()), int(s.leaves.home.Fd()))
}
