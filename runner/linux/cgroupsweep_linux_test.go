package linux

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweepOrphanCgroups: an empty cordon cgroup that no run of the state
// directory owns is removed; one with a run directory is kept.
func TestSweepOrphanCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" && os.Getenv("CORDON_ROOTLESS") != "1" {
			t.Fatal("needs root to create cgroups, and CI=true forbids skipping")
		}
		t.Skip("needs root to create cgroups; the root pass of make test covers it")
	}
	root := "/sys/fs/cgroup/pids/cordon"
	if _, err := os.Stat("/sys/fs/cgroup/pids"); err != nil {
		root = "/sys/fs/cgroup/cordon" // cgroup v2
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := openStateDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(root, "cordon-sweeptest-orphan")
	owned := filepath.Join(root, "cordon-sweeptest-owned")
	for _, d := range []string{orphan, owned} {
		if err := os.Mkdir(d, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		defer os.Remove(d)
	}
	if err := os.MkdirAll(st.runDir("cordon-sweeptest-owned"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := sweepInterval
	sweepInterval = 0
	defer func() { sweepInterval = old }()
	time.Sleep(10 * time.Millisecond)
	st.sweepOrphanCgroups()
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphaned cgroup %s was not removed (%v)", orphan, err)
	}
	if _, err := os.Stat(owned); err != nil {
		t.Fatalf("a cgroup owned by a run was removed: %v", err)
	}
}
