package linux

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEventWatch: the watch sees an oom_kill or pids "max" counter rise
// while the run is live, and keeps it after the files are gone (a systemd
// scope removed before the run's end). Plain files stand in for the
// cgroup's: inotify reports their writes the same way.
func TestEventWatch(t *testing.T) {
	dir := t.TempDir()
	mem, pids := filepath.Join(dir, "memory.events"), filepath.Join(dir, "pids.events")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(mem, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 0\n")
	write(pids, "max 0\n")
	w, err := watchEvents(dir, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if w.OOMKilled() || w.PidsLimited() {
		t.Fatal("counters at zero read as events")
	}
	write(mem, "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
	write(pids, "max 2\n")
	for i := 0; !(w.OOMKilled() && w.PidsLimited()); i++ {
		if i == 30000 {
			t.Fatalf("the watch never saw the counters rise: oom %v, pids %v", w.OOMKilled(), w.PidsLimited())
		}
		time.Sleep(time.Millisecond)
	}
	os.Remove(mem)
	os.Remove(pids)
	w.Stop()
	if !w.OOMKilled() || !w.PidsLimited() {
		t.Error("the events were lost with the files")
	}
	var none *eventWatch
	if none.OOMKilled() || none.PidsLimited() {
		t.Error("no watch reports events")
	}
}

// TestEventWatchMissingFile: a cgroup without the file is an error, not a
// watch that can never fire.
func TestEventWatchMissingFile(t *testing.T) {
	if _, err := watchEvents(t.TempDir(), true, false); err == nil {
		t.Fatal("watching a missing memory.events succeeded")
	}
}
