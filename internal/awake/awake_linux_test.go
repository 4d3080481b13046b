//go:build linux && cgo

package awake

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// keeperThread finds the keeper: the one thread of this process at nice 19.
func keeperThread(t *testing.T) string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/self/task/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		f := taskStat(t, d)
		if f != nil && f[16] == "19" {
			return d
		}
	}
	return ""
}

// taskStat returns the fields of d/stat after the command's name (field 3,
// the state, is index 0), or nil if the thread is gone.
func taskStat(t *testing.T, d string) []string {
	t.Helper()
	b, err := os.ReadFile(d + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
}

// cpuTicks is the thread's user and system time in clock ticks.
func cpuTicks(t *testing.T, d string) int {
	f := taskStat(t, d)
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// startedKeeper starts the process's keeper (skipping where there is
// none) and returns its thread's /proc directory.
func startedKeeper(t *testing.T) string {
	t.Helper()
	if os.Getenv("CORDON_KEEP_AWAKE") == "0" {
		t.Skip("CORDON_KEEP_AWAKE=0 in the environment")
	}
	if !Start() {
		t.Skip("no keeper on this host: fewer than two CPUs in this thread's affinity mask")
	}
	// The thread sets its own priority when it starts.
	d := keeperThread(t)
	for i := 0; i < 500 && d == ""; i++ {
		time.Sleep(10 * time.Millisecond)
		d = keeperThread(t)
	}
	if d == "" {
		t.Fatal("Start reported a keeper, but no thread of this process runs at nice 19")
	}
	return d
}

// TestKeeperSpinsOnlyWhilePoked: the keeper runs while Poke is called,
// goes to sleep a Window after the last Poke, and then takes no CPU.
func TestKeeperSpinsOnlyWhilePoked(t *testing.T) {
	d := startedKeeper(t)
	// Poked: the keeper runs (state R) at some point.
	running := false
	for i := 0; i < 2000 && !running; i++ {
		Poke()
		running = taskStat(t, d)[0] == "R"
		time.Sleep(50 * time.Microsecond)
	}
	if !running {
		t.Fatalf("the keeper (%s) never ran while poked", d)
	}
	// Not poked: it goes to sleep (state S, a spin counted as ended).
	for i := 0; i < 3000 && (Spins() == 0 || taskStat(t, d)[0] != "S"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if Spins() == 0 || taskStat(t, d)[0] != "S" {
		t.Fatalf("the keeper did not go to sleep when no longer poked: state %s, spins %d", taskStat(t, d)[0], Spins())
	}
	// Asleep, it takes no CPU.
	c0 := cpuTicks(t, d)
	time.Sleep(300 * time.Millisecond)
	if c1 := cpuTicks(t, d); c1 != c0 {
		t.Fatalf("the sleeping keeper used %d clock ticks of CPU in 300 ms", c1-c0)
	}
	// Poked again, it wakes up and runs once more.
	running = false
	for i := 0; i < 2000 && !running; i++ {
		Poke()
		running = taskStat(t, d)[0] == "R"
		time.Sleep(50 * time.Microsecond)
	}
	if !running {
		t.Fatal("the keeper did not wake up when poked again")
	}
}

// TestKeeperOffSwitch: CORDON_KEEP_AWAKE=0 starts no keeper.
func TestKeeperOffSwitch(t *testing.T) {
	if os.Getenv("AWAKE_TEST_CHILD") == "1" {
		if Start() {
			t.Fatal("Start started a keeper with CORDON_KEEP_AWAKE=0")
		}
		Poke()
		if d := keeperThread(t); d != "" {
			t.Fatalf("a thread at nice 19 (%s) with CORDON_KEEP_AWAKE=0", d)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKeeperOffSwitch$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AWAKE_TEST_CHILD=1", "CORDON_KEEP_AWAKE=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
