package linux

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// sweepInterval is how often a run looks for orphaned cgroups, and how old
// an empty cgroup must be to count as orphaned (a variable for tests).
var sweepInterval = time.Minute

// sweepOrphanCgroups removes empty "cordon-*" cgroups under /cordon that
// are over a minute old and belong to no run of this state directory. They
// are left when a cordon is killed and its state directory is then removed
// by someone else (a test harness, a tmp cleaner), so no later run can reap
// them by their state. A cgroup with processes, or a young one (a run being
// set up), is never touched. It runs at most once a minute per state
// directory.
func (s *stateDir) sweepOrphanCgroups() {
	marker := filepath.Join(s.dir, "cgroup-sweep")
	if fi, err := os.Stat(marker); err == nil && time.Since(fi.ModTime()) < sweepInterval {
		return
	}
	_ = os.WriteFile(marker, nil, 0o600)
	now := time.Now()
	_ = os.Chtimes(marker, now, now)
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/cordon")
	if fi, err := os.Stat("/sys/fs/cgroup/cordon"); err == nil && fi.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/cordon")
	}
	for _, root := range roots {
		ents, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range ents {
			id := e.Name()
			if !e.IsDir() || !strings.HasPrefix(id, "cordon-") {
				continue
			}
			if _, err := os.Stat(s.runDir(id)); err == nil {
				continue // a run of ours: its own cleanup handles it
			}
			dir := filepath.Join(root, id)
			fi, err := e.Info()
			if err != nil || time.Since(fi.ModTime()) < sweepInterval {
				continue
			}
			if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || len(strings.TrimSpace(string(procs))) > 0 {
				continue
			}
			if err := unix.Rmdir(dir); err == nil {
				logrus.WithField("cgroup", dir).Info("removed an orphaned cgroup")
			}
		}
	}
}
