package ociruntime

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard"
)

// inotifyEvent is one struct inotify_event with its name padded to room.
func inotifyEvent(name string, room int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+room)
	binary.NativeEndian.PutUint32(b[12:16], uint32(room))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestNamesState(t *testing.T) {
	join := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"state.json", inotifyEvent("state.json", 16), true},
		{"libcontainer's temporary file", inotifyEvent("state-123456", 16), false},
		{"a longer name that starts the same", inotifyEvent("state.json.tmp", 16), false},
		{"state.json after another event", join(inotifyEvent("state-1", 16), inotifyEvent("state.json", 16)), true},
		{"a name cut short", inotifyEvent("state.json", 16)[:unix.SizeofInotifyEvent+4], false},
		{"nothing", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := namesState(tc.b); got != tc.want {
				t.Fatalf("namesState = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEarlyTun: the device is made in the namespace of the pid the state
// names, as soon as state.json names it (the test waits until it is
// there, before any take); the gate takes it for that pid, and one made
// for another pid is closed, its device gone from the namespace (nothing
// is left when the container fails first).
func TestEarlyTun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the init's network namespace (the rootless lane makes it through podman)")
	}
	for _, tc := range []struct {
		name   string
		offset int // the pid the gate asks for, from the state's
		want   bool
	}{
		{"the init the state names", 0, true},
		{"another pid: the device is closed", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			init := exec.Command("sleep", "60")
			init.SysProcAttr = &unix.SysProcAttr{Cloneflags: unix.CLONE_NEWNET}
			if err := init.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = init.Process.Kill(); _ = init.Wait() }()
			pid := init.Process.Pid
			dir := t.TempDir()
			e := watchState(dir, []string{"example.com:443"})
			if e == nil {
				t.Fatal("watchState: the directory was not watched")
			}
			// As libcontainer's saveState writes it: a temporary file, renamed.
			tmp := filepath.Join(dir, "state-1")
			if err := os.WriteFile(tmp, []byte(`{"id":"c","init_process_pid":`+strconv.Itoa(pid)+`}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
				t.Fatal(err)
			}
			for !hasTun(t, pid) {
				time.Sleep(time.Millisecond)
			}
			dev := e.take(pid + tc.offset)
			if (dev != nil) != tc.want {
				t.Fatalf("take: device %v, want one: %v", dev != nil, tc.want)
			}
			if dev != nil {
				dev.Close()
				return
			}
			if hasTun(t, pid) {
				t.Fatal("the device made ahead is left in the namespace")
			}
		})
	}
}

// TestEarlyTunNoState: a watch that never sees the state ends when taken,
// with no device (the gate then makes it itself).
func TestEarlyTunNoState(t *testing.T) {
	e := watchState(t.TempDir(), []string{"example.com:443"})
	if e == nil {
		t.Fatal("watchState: the directory was not watched")
	}
	if dev := e.take(1); dev != nil {
		dev.Close()
		t.Fatal("take: a device without a state")
	}
}

// hasTun reports whether the network namespace of pid has the guard's
// device.
func hasTun(t *testing.T, pid int) bool {
	t.Helper()
	links, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(links), netguard.TunName)
}

// TestEarlyTunTakenFirst: a take before the state names the init claims
// the device for the gate: it returns none at once (the gate makes it,
// with the pid it has, instead of waiting for the watch to read the
// state), and the watch, claimed, makes none.
func TestEarlyTunTakenFirst(t *testing.T) {
	dir := t.TempDir()
	e := watchState(dir, []string{"example.com:443"})
	if e == nil {
		t.Fatal("watchState: the directory was not watched")
	}
	if dev := e.take(os.Getpid()); dev != nil {
		dev.Close()
		t.Fatal("take: a device before the state named the init")
	}
	if !e.claimed.Load() {
		t.Fatal("take did not claim the device")
	}
}

// TestInitPidOf: the init's pid is libcontainer's top-level
// init_process_pid, wherever it stands; the same key inside the config
// (a sysctl, say) is not taken, and a state without it, or not JSON, is 0.
func TestInitPidOf(t *testing.T) {
	for _, tc := range []struct {
		name, state string
		want        int
	}{
		{"as libcontainer writes it", `{"id":"c","init_process_pid":42,"init_process_start":7,"config":{"rootfs":"/r"}}`, 42},
		{"after the config", `{"id":"c","config":{"sysctl":{"init_process_pid":"7"},"labels":["init_process_pid=9"]},"init_process_pid":43}`, 43},
		{"only inside the config", `{"id":"c","config":{"sysctl":{"init_process_pid":7}}}`, 0},
		{"none yet", `{"id":"c","init_process_pid":0}`, 0},
		{"not an object", `[{"init_process_pid":5}]`, 0},
		{"cut short", `{"id":"c","init_pro`, 0},
		{"a string pid", `{"init_process_pid":"5"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := initPidOf(strings.NewReader(tc.state)); got != tc.want {
				t.Errorf("initPidOf(%s) = %d, want %d", tc.state, got, tc.want)
			}
		})
	}
}
