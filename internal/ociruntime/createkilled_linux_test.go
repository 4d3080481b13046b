package ociruntime_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOCIStartAfterGuardedCreateKilled: a create of a container with
// run.cordon.network.allow alone that is killed once libcontainer has
// recorded the container (state.json, status created) but before it handed
// the container to its supervisor leaves a created container with no
// supervisor and no guard's device. start must refuse it, as it refuses a
// container whose supervisor ended (ErrSupervisorGone), or its command must
// find the guard's device; it must never run without it. Since ddfa4f3
// starts the supervisor after the handoff, its pid file is written last,
// start finds none and runs the command with no guard (exit 0; passes
// against 50bc7b9's binary, where the pid file is written before Start).
// Root (a rootless bundle has a user namespace of its own, where the allow
// list is refused).
func TestOCIStartAfterGuardedCreateKilled(t *testing.T) {
	requireRoot(t)
	root, err := os.MkdirTemp("", "oci")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	id := "cordon-oci-test-createkilled"
	out := filepath.Join(t.TempDir(), "out")
	oci := func(args ...string) result {
		return runCmd(t, nil, ociBin, append([]string{"--root", root}, args...)...)
	}
	bundle := writeBundle(t, id, []string{"sh", "-c", "echo ran; grep -q cordon0 /proc/net/dev && echo device; : " + testMarker})
	annotate(t, bundle, map[string]string{"run.cordon.network.allow": "example.com:443"})
	// Each attempt stops create at its first sight of state.json (the
	// container recorded, created), kills it, and starts the container:
	// start must refuse it, or its command must find the guard's device.
	caught := 0
	for attempt := 0; attempt < 10; attempt++ {
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		create := exec.Command(ociBin, "--root", root, "create", "--bundle", bundle, id)
		create.Stdout, create.Stderr = f, f
		if err := create.Start(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		exited := make(chan struct{})
		go func() { _ = create.Wait(); close(exited) }()
		state := filepath.Join(root, id, "state.json")
		seen := false
		for !seen {
			select {
			case <-exited:
				seen = true
				continue
			default:
			}
			if _, err := os.Stat(state); err == nil {
				_ = create.Process.Signal(syscall.SIGSTOP)
				pid, perr := os.ReadFile(filepath.Join(root, id, "cordon-broker.pid"))
				if errors.Is(perr, os.ErrNotExist) || string(pid) == "pending" {
					caught++
				}
				seen = true
			}
			time.Sleep(100 * time.Microsecond)
		}
		_ = create.Process.Signal(syscall.SIGKILL)
		<-exited
		r := oci("start", id)
		// The init ends with delete: whatever it was let to run is in out then.
		oci("delete", "--force", id)
		b, _ := os.ReadFile(out)
		if strings.Contains(string(b), "ran") && !strings.Contains(string(b), "device") {
			t.Fatalf("attempt %d: start of a container whose create was killed before the handoff: exit %d stderr %q, and its command ran without the guard's device: %q; want start refused (ErrSupervisorGone)", attempt, r.code, r.stderr, b)
		}
	}
	t.Logf("%d of 10 attempts caught create before its supervisor was spawned", caught)
}
