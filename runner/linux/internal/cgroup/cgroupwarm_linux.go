package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/sirupsen/logrus"
)

// PrewarmCgroupLock starts, in the background, the kernel's slow path that
// libcontainer's first cgroup attach would otherwise wait for.
//
// Moving a process into a cgroup takes the global cgroup_threadgroup_rwsem
// for writing, and after a quiet spell that waits for a full RCU grace
// period (rcu_sync_enter): measured here, about 10 ms of every run with the
// CPU idle, the largest single item of a run on cgroup v1. Writing cordon's
// own pid into the cgroup it is already in is a no-op move that takes the
// same lock; done in a goroutine at the start of a run, the grace period
// elapses while cordon builds the spec, and libcontainer's attach a few
// milliseconds later finds the lock warm. Any failure is ignored: it is
// only an optimization.
//
// It is v1 work: on cgroup v2 libcontainer starts the init straight in its
// cgroup (clone3 with CLONE_INTO_CGROUP) and no attach waits for the lock,
// so nothing is done there.
func PrewarmCgroupLock() {
	if cgroups.IsCgroup2UnifiedMode() {
		return
	}
	// One prewarm serves one run: skip when one started moments ago (the
	// CLI starts it early, then Run asks again).
	now := time.Now().UnixNano()
	if last := lastPrewarm.Load(); last != 0 && now-last < int64(50*time.Millisecond) {
		return
	}
	lastPrewarm.Store(now)
	startPrewarm()
}

// PrewarmCgroups starts the cgroup-lock prewarm early, for a caller (the
// CLI) that knows a run as root is coming: the earlier it starts, the more
// of the kernel's grace period overlaps cordon's own start-up. It does
// nothing when not root.
func PrewarmCgroups() {
	if os.Geteuid() == 0 {
		PrewarmCgroupLock()
	}
}

var lastPrewarm atomic.Int64

func startPrewarm() {
	path := ownCgroupProcs()
	if path == "" {
		return
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			logrus.WithError(err).Debug("cgroup prewarm")
			return
		}
		defer f.Close()
		if _, err := f.WriteString(strconv.Itoa(os.Getpid())); err != nil {
			logrus.WithError(err).Debug("cgroup prewarm")
		}
	}()
}

// ownCgroupProcs returns the cgroup.procs file of the cgroup this process
// is in, in the pids (or any mounted) cgroup v1 hierarchy.
func ownCgroupProcs() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	for _, want := range []string{"pids", "cpu", "memory"} {
		for _, line := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			for _, c := range strings.Split(parts[1], ",") {
				if c == want {
					p := filepath.Join("/sys/fs/cgroup", parts[1], parts[2], "cgroup.procs")
					if _, err := os.Stat(p); err == nil {
						return p
					}
				}
			}
		}
	}
	return ""
}
