package ociruntime_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/cordon-run/cordon/internal/netguard"
	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// TestOCINetworkAllowUnbrokered: a container with run.cordon.network.allow
// and no deny, protect or audit has the network guard and no broker. Its
// seccomp filter is the spec's profile exactly as runc would load it (no
// notified call, no listener), its supervisor holds no seccomp notify
// descriptor (so no call of the container, a file create among them,
// ever reaches it) and no broker socket exists; the allow list still
// holds: the listed server is reached, the other port refused, typed in
// the runtime log, and never reached; the supervisor ends with the
// container's init, and nothing is left after rm. With protect beside the
// allow list the same container is brokered (the test can fail). Root
// and rootless podman.
func TestOCINetworkAllowUnbrokered(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	h := nettest.NewHost(t, "allowed.test")
	addr := h.Addr.String()
	allow := fmt.Sprintf("run.cordon.network.allow=%s:%d", addr, h.HTTPPort)
	for _, tc := range []struct {
		name     string
		flags    []string
		brokered bool
	}{
		{"allow list alone", []string{"--annotation", allow}, false},
		{"allow list and protect", append([]string{"--annotation", allow}, annotation("run.cordon.protect", "/etc/app.conf")...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(p.dir, strings.ReplaceAll(tc.name, " ", "-")+".log")
			q := *p
			q.base = append(slices.Clone(p.base), "--runtime-flag", "log="+logPath, "--runtime-flag", "log-format=json")
			gate := filepath.Join(p.dir, "go")
			os.Remove(gate)
			script := "grep -q " + netguard.TunName + " /proc/net/dev && echo device; while [ ! -e /host/go ]; do sleep 0.2; done; touch /tmp/created && echo created; " +
				netScript(addr, h.HTTPPort) + "; echo next; " + netScript(addr, h.HTTPSPort) + "; : " + testMarker
			flags := append([]string{"-d", "-v", p.dir + ":/host"}, tc.flags...)
			r := q.run(t, append(q.runArgs(flags...), q.image, "sh", "-c", script)...)
			id := strings.TrimSpace(r.stdout)
			if r.code != 0 || id == "" {
				t.Fatalf("podman run -d: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			defer q.run(t, "rm", "-f", id)
			sup := supervisorPid(id)
			if sup == 0 {
				t.Fatalf("container %s has no supervisor", id)
			}
			notify, listener := seccompOf(t, id)
			if notify != tc.brokered || listener != tc.brokered {
				t.Errorf("the container's seccomp: a notified call %v, a listener %v; want both %v", notify, listener, tc.brokered)
			}
			if n := notifyFDs(t, sup); (n > 0) != tc.brokered {
				t.Errorf("the supervisor holds %d seccomp notify descriptors; want some: %v", n, tc.brokered)
			}
			socks, _ := filepath.Glob(filepath.Join(stateRoot(), ".cordon-broker-*.sock"))
			if (len(socks) > 0) != tc.brokered {
				t.Errorf("broker sockets %v; want one: %v", socks, tc.brokered)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := q.run(t, "wait", id); strings.TrimSpace(r.stdout) != "0" {
				t.Fatalf("podman wait: %q (stderr %q)", r.stdout, r.stderr)
			}
			// The supervisor ends with the container's init, before rm.
			for supervisorPid(id) != 0 {
				time.Sleep(10 * time.Millisecond)
			}
			if logs := q.run(t, "logs", id); logs.stdout != "device\ncreated\nreached\nnext\n" {
				t.Errorf("container output %q (stderr %q); want the guard's device there from the first, the file created, the allowed server reached and the other refused", logs.stdout, logs.stderr)
			}
			var refused bool
			for _, rec := range readJSONLines(t, logPath) {
				refused = refused || (hasRecord([]map[string]any{rec}, map[string]string{"cordon": "refused", "rule": "network", "addr": addr, "level": "warning"}) &&
					fmt.Sprint(rec["port"]) == strconv.Itoa(h.HTTPSPort))
			}
			if !refused {
				b, _ := os.ReadFile(logPath)
				t.Errorf("no typed refusal of port %d in the runtime log:\n%s", h.HTTPSPort, b)
			}
			if r := q.run(t, "rm", id); r.code != 0 {
				t.Fatalf("podman rm: %d %s", r.code, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(stateRoot(), id)); !os.IsNotExist(err) {
				t.Errorf("the state directory is left (%v)", err)
			}
			if socks, _ := filepath.Glob(filepath.Join(stateRoot(), ".cordon-broker-*.sock")); len(socks) > 0 {
				t.Errorf("broker sockets are left: %v", socks)
			}
			assertNoBroker(t)
		})
	}
	for _, s := range h.Served() {
		if strings.Contains(s, fmt.Sprint(h.HTTPSPort)) {
			t.Errorf("the refused port was reached: %q", s)
		}
	}
}

// TestOCINetworkRunDeviceFirst: cordon-oci run (create and start in one,
// which libcontainer's Run does at once) with an allow list starts the
// command only once the guard's device is in its namespace: its first
// action finds it, with the allow list alone (no notified call holds the
// init: run starts it only after the handoff) and with protect beside it.
// The supervisor and the state are gone once run returns. Root (a
// rootless bundle has a user namespace of its own, where the allow list is
// refused; podman's rootless run is TestOCINetworkAllowUnbrokered).
func TestOCINetworkRunDeviceFirst(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name string
		a    map[string]string
	}{
		{"allow list alone", map[string]string{"run.cordon.network.allow": "example.com:443"}},
		{"allow list and protect", map[string]string{"run.cordon.network.allow": "example.com:443", "run.cordon.protect": "/etc/app.conf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := os.MkdirTemp("", "oci")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			log := filepath.Join(t.TempDir(), "log")
			id := "cordon-oci-test-rundev-" + strconv.Itoa(len(tc.a))
			bundle := writeBundle(t, id, []string{"sh", "-c", "grep -q " + netguard.TunName + " /proc/net/dev && echo device; : " + testMarker})
			annotate(t, bundle, tc.a)
			r := runCmd(t, nil, ociBin, "--root", root, "--log", log, "run", "--bundle", bundle, id)
			if r.code != 0 || r.stdout != "device\n" {
				b, _ := os.ReadFile(log)
				t.Errorf("run: exit %d stdout %q stderr %q log %s; want the device there at the command's first action", r.code, r.stdout, r.stderr, b)
			}
			if pid := supervisorPid(id); pid != 0 {
				t.Errorf("the supervisor %d outlived run", pid)
			}
			if _, err := os.Stat(filepath.Join(root, id)); !os.IsNotExist(err) {
				t.Errorf("the state directory is left (%v)", err)
			}
			if socks, _ := filepath.Glob(filepath.Join(root, ".cordon-broker-*.sock")); len(socks) > 0 {
				t.Errorf("broker sockets are left: %v", socks)
			}
		})
	}
}

// seccompOf reads container id's filter as libcontainer loaded it (its
// state): whether it notifies a call and names a listener. Unbrokered, it
// must be the bundle's profile as runc converts it.
func seccompOf(t *testing.T, id string) (notify, listener bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(stateRoot(), id, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Config configs.Config `json:"config"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	got := st.Config.Seccomp
	if got == nil {
		t.Fatal("the container has no seccomp filter: podman gives it its profile")
	}
	for _, s := range got.Syscalls {
		notify = notify || (s != nil && s.Action == configs.Notify)
	}
	listener = got.ListenerPath != ""
	if notify || listener {
		return notify, listener
	}
	bundle, ok := utils.SearchLabels(st.Config.Labels, "bundle")
	if !ok {
		t.Fatal("the state names no bundle")
	}
	var s specs.Spec
	if data, err = os.ReadFile(filepath.Join(bundle, "config.json")); err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := specconv.SetupSeccomp(s.Linux.Seccomp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jsonOf(t, got), jsonOf(t, want)) {
		t.Errorf("the container's filter is not the spec's profile as runc loads it")
	}
	return notify, listener
}

func jsonOf(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// notifyFDs counts the seccomp notify descriptors the supervisor pid
// holds, once it holds what create handed over (a pidfd of the init
// comes with every handoff).
func notifyFDs(t *testing.T, pid int) int {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	for {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("the supervisor's descriptors: %v", err)
		}
		n, handed := 0, false
		for _, e := range ents {
			l, _ := os.Readlink(filepath.Join(dir, e.Name()))
			handed = handed || l == "anon_inode:[pidfd]"
			if l == "anon_inode:seccomp notify" {
				n++
			}
		}
		if handed {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}
