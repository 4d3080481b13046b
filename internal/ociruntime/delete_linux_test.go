package ociruntime_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"time"

	"github.com/cordon-run/cordon/internal/testenv"

	"github.com/opencontainers/runc/libcontainer/specconv"
)

// TestOCIDelete drives cordon-oci's delete as runc's: a stopped container
// is destroyed with or without --force (at once: podman run --rm deletes
// every container with --force), a created one is killed and destroyed, a
// running one is refused without --force and left running, and killed
// with it. Nothing is left: no state directory, no process, no cgroup.
// Root, and rootless (CORDON_ROOTLESS=1: a user namespace of its own).
func TestOCIDelete(t *testing.T) {
	testenv.SkipIfShort(t, "starts containers with cordon-oci")
	if os.Geteuid() != 0 && os.Getenv("CORDON_ROOTLESS") != "1" {
		requireRoot(t)
	}
	tests := []struct {
		name     string
		args     []string // the container's command
		start    bool     // start it (else it stays created)
		stopped  bool     // wait until it has stopped
		force    bool
		wantCode int
		wantLog  string // in the runtime log
	}{
		{name: "stopped", args: []string{"true"}, start: true, stopped: true},
		{name: "stopped-force", args: []string{"true"}, start: true, stopped: true, force: true},
		{name: "created", args: []string{"sleep", testMarker}},
		{name: "running-force", args: []string{"sleep", testMarker}, start: true, force: true},
		{name: "running", args: []string{"sleep", testMarker}, start: true, wantCode: 1, wantLog: "that is not stopped: running; stop it first, or delete it with --force"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			log := filepath.Join(t.TempDir(), "log")
			id := "cordon-oci-test-delete-" + tc.name
			oci := func(args ...string) result {
				return runCmd(t, nil, ociBin, append([]string{"--root", root, "--log", log}, args...)...)
			}
			bundle := writeBundle(t, id, tc.args)
			// The init keeps create's stdio: not the test's pipes.
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer null.Close()
			create := exec.Command(ociBin, "--root", root, "--log", log, "create", "--bundle", bundle, id)
			create.Stdin, create.Stdout, create.Stderr = null, null, null
			if err := create.Run(); err != nil {
				b, _ := os.ReadFile(log)
				t.Fatalf("create: %v; log %s", err, b)
			}
			t.Cleanup(func() { oci("delete", "--force", id) })
			if tc.start {
				if r := oci("start", id); r.code != 0 {
					t.Fatalf("start: %+v", r)
				}
			}
			want := "created"
			switch {
			case tc.stopped:
				want = "stopped"
			case tc.start:
				want = "running"
			}
			for status(t, oci("state", id)) != want {
				if tc.stopped {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				t.Fatalf("the container is %s, not %s", status(t, oci("state", id)), want)
			}
			args := []string{"delete", id}
			if tc.force {
				args = []string{"delete", "--force", id}
			}
			r := oci(args...)
			if r.code != tc.wantCode {
				b, _ := os.ReadFile(log)
				t.Fatalf("delete: exit %d, want %d; %+v; log %s", r.code, tc.wantCode, r, b)
			}
			if tc.wantCode != 0 {
				b, _ := os.ReadFile(log)
				if !strings.Contains(string(b), tc.wantLog) {
					t.Errorf("log %q lacks %q", b, tc.wantLog)
				}
				// Refused: the container runs on, untouched.
				if s := status(t, oci("state", id)); s != "running" {
					t.Errorf("after a refused delete the container is %s, not running", s)
				}
				return
			}
			if _, err := os.Stat(filepath.Join(root, id)); !os.IsNotExist(err) {
				t.Errorf("the state directory is left (%v)", err)
			}
			if r := oci("state", id); r.code == 0 {
				t.Errorf("state answers after delete: %s", r.stdout)
			}
			assertNoProcess(t, testMarker)
			if m, _ := filepath.Glob("/sys/fs/cgroup/*/" + id); len(m) > 0 {
				t.Errorf("cgroups are left: %v", m)
			}
		})
	}
}

// writeBundle writes an OCI bundle whose root is the test's busybox root
// filesystem and whose process runs args: runc spec's, with a user
// namespace of its own for a user (runc spec --rootless).
func writeBundle(t *testing.T, id string, args []string) string {
	t.Helper()
	s := specconv.Example()
	s.Root.Path = rootfs
	s.Process.Terminal = false
	s.Process.Args = args
	if os.Geteuid() == 0 {
		s.Linux.CgroupsPath = "/" + id
	} else {
		// A user's cgroup errors are ignored only without a path.
		specconv.ToRootless(s)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// status is the status in state's JSON ("" when it failed).
func status(t *testing.T, r result) string {
	t.Helper()
	var st struct {
		Status string `json:"status"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		return ""
	}
	return st.Status
}
