package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
)

// Rootless limits through cgroup v2 delegation, without systemd (for the
// user's systemd, see cgroupsystemd_linux.go). A user who owns the cgroup
// cordon runs in (systemd-run --user --scope -p Delegate=yes makes one; so
// does root with mkdir and chown, as systemd does for user@.service) can
// create child cgroups there and set their limits. cordon then puts each
// limited run in a child "cordon-<id>" of that cgroup. cgroup v2 allows
// processes only in leaves once controllers are enabled for the children,
// so the processes of that cgroup first move into its child "leaf", and a
// later run from the leaf uses the leaf's parent again.

// LeafCgroup is the child of a delegated cgroup that holds its processes.
const LeafCgroup = "leaf"

// cgroupRoot is where the unified hierarchy is mounted.
const cgroupRoot = "/sys/fs/cgroup"

// ProbeDelegation reads what this host offers a rootless run: the user's
// systemd, when it answers on the user's D-Bus, else this process's cgroup
// when the user owns it.
func ProbeDelegation() runner.Delegation {
	if !cgroups.IsCgroup2UnifiedMode() {
		return runner.Delegation{Problem: "cgroup v1 has no delegation to unprivileged users, so rootless runs have no cgroup to enforce them", V1: true}
	}
	if d, ok := probeSystemdUser(); ok {
		return d
	}
	own, err := ownCgroup()
	if err != nil {
		return runner.Delegation{Problem: fmt.Sprintf("cannot read this process's cgroup: %v", err)}
	}
	base := own
	if filepath.Base(own) == LeafCgroup && ownedCgroup(filepath.Dir(own)) {
		base = filepath.Dir(own)
	}
	if base == "/" || !ownedCgroup(base) {
		return runner.Delegation{Problem: fmt.Sprintf("this process's cgroup %s is not delegated to uid %d, and no systemd answers on the user's D-Bus", own, os.Geteuid())}
	}
	data, err := os.ReadFile(filepath.Join(cgroupRoot, base, "cgroup.controllers"))
	if err != nil {
		return runner.Delegation{Problem: fmt.Sprintf("delegated cgroup %s: %v", base, err)}
	}
	return runner.Delegation{Base: base, Controllers: strings.Fields(string(data))}
}

// ownCgroup is this process's cgroup v2 path, "/a/b", as /proc/self/cgroup
// names it.
func ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Clean(p), nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

// ownedCgroup reports whether this user owns cgroup p and may move
// processes into it and enable controllers for its children: what
// delegation grants.
func ownedCgroup(p string) bool {
	dir := filepath.Join(cgroupRoot, p)
	var st unix.Stat_t
	if unix.Stat(dir, &st) != nil || int(st.Uid) != os.Geteuid() {
		return false
	}
	for _, f := range []string{"cgroup.procs", "cgroup.subtree_control"} {
		if unix.Access(filepath.Join(dir, f), unix.W_OK) != nil {
			return false
		}
	}
	return true
}

// PrepareDelegated makes the delegated cgroup base ready for a run's child
// cgroup with the controllers want: when they are not yet enabled for its
// children, its processes (this one and any other the user left there)
// move into base/leaf first, since cgroup v2 allows processes only in
// leaves, then the controllers are enabled.
func PrepareDelegated(base string, want []string) error {
	dir := filepath.Join(cgroupRoot, base)
	enabled, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("delegated cgroup %s: %w", base, err)
	}
	var missing []string
	for _, c := range want {
		if !slices.Contains(strings.Fields(string(enabled)), c) {
			missing = append(missing, "+"+c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := moveToLeaf(dir); err != nil {
		return fmt.Errorf("delegated cgroup %s: move its processes into %s: %w", base, LeafCgroup, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(missing, " ")), 0); err != nil {
		return fmt.Errorf("delegated cgroup %s: enable %s for its children: %w", base, strings.Join(missing, " "), err)
	}
	return nil
}

// moveToLeaf moves every process of cgroup dir into dir/leaf, until none
// is left (a process may fork while it is moved).
func moveToLeaf(dir string) error {
	leaf := filepath.Join(dir, LeafCgroup)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for range 10 {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return err
		}
		pids := strings.Fields(string(data))
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			if _, err := strconv.Atoi(p); err != nil {
				continue
			}
			err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(p), 0)
			if err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pid %s: %w", p, err)
			}
		}
	}
	return errors.New("processes keep appearing in it")
}
