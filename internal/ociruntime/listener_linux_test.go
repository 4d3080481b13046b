package ociruntime_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/cordon-run/cordon/internal/testenv"
)

// ownListener installs a seccomp filter of its own with a listener
// (SECCOMP_FILTER_FLAG_NEW_LISTENER) that notifies openat, then lets a
// child's open of argv[1] for writing through (SECCOMP_USER_NOTIF_FLAG_
// CONTINUE). Of two filters that notify a call, the kernel asks the newer
// one's listener, and a call it continues is performed: no older filter is
// asked. While cordon's listener is open the kernel refuses a second one
// (EBUSY); once it is closed (the supervisor gone) nothing did.
const ownListener = `#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) { perror("prctl"); return 2; }
	int l = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (l < 0) { perror("seccomp"); return 2; }
	pid_t c = fork();
	if (c < 0) { perror("fork"); return 3; }
	if (c == 0) {
		int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) { perror("open"); _exit(4); }
		if (write(fd, "pwned\n", 6) != 6) { perror("write"); _exit(5); }
		if (write(1, "written\n", 8) != 8) _exit(5);
		_exit(0);
	}
	for (;;) {
		int st;
		if (waitpid(c, &st, WNOHANG) == c) return WIFEXITED(st) ? WEXITSTATUS(st) : 6;
		struct pollfd p = {l, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0 || !(p.revents & POLLIN)) continue;
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		memset(&req, 0, sizeof req);
		if (ioctl(l, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) continue;
		memset(&resp, 0, sizeof resp);
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(l, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}
`

// TestOCINoListenerOfItsOwn is the security property "a container whose
// supervisor is gone cannot serve its own calls": the kernel refuses a
// second seccomp listener only while the first is open, and a call that a
// newer filter notifies goes to the newer listener, which may let it
// through (the older filter, cordon's, is not asked). So once the
// supervisor died (killed at any moment after create, here after the
// container started; or by the container itself, which the annotations
// let share the host's PID namespace, as the runtime's uid), a container
// process installed its own listener and created a protected path the
// broker refuses. Under the annotations the
// filter refuses a listener of the container's own (EBUSY, as the kernel
// does while cordon's is open), with the supervisor alive or killed, and
// the path stays missing. Root and rootless podman.
func TestOCINoListenerOfItsOwn(t *testing.T) {
	requirePodmanUser(t)
	requireTool(t, "gcc")
	p := newPodman(t)
	src := filepath.Join(p.dir, "listener.c")
	if err := os.WriteFile(src, []byte(ownListener), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-static", "-o", filepath.Join(p.dir, "listener"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name      string
		annotated bool
		kill      bool
		// pidHost: the container shares the host's PID namespace, which
		// the annotations allow, and kills its supervisor itself (the
		// runtime's uid is its own), with no help from the host.
		pidHost bool
	}{
		// Without the annotations the same program creates the file:
		// the test can fail.
		{"no annotations", false, false, false},
		{"supervisor alive", true, false, false},
		{"supervisor killed", true, true, false},
		{"the container kills its supervisor", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := filepath.Join(p.dir, "go")
			os.Remove(gate)
			flags := []string{"-d", "-v", p.dir + ":/host"}
			if tc.annotated {
				flags = append(flags, annotation("run.cordon.protect", "/data/planted")...)
			}
			script := "while [ ! -e /host/go ]; do sleep 0.2; done; "
			if tc.pidHost {
				flags = append(flags, "--pid", "host")
				// The supervisor's command line names the container's
				// id, which begins with its host name.
				script += `h=$(cat /proc/sys/kernel/hostname); for f in /proc/[0-9]*/cmdline; do ` +
					`grep -qs __broker "$f" && grep -qs "$h" "$f" && p=${f#/proc/} && p=${p%/cmdline} && kill -9 $p && echo killed; done; ` +
					`while grep -qs __broker /proc/$p/cmdline; do sleep 0.1; done; `
			}
			script += "/host/listener /data/planted; echo exit $?; " +
				"test -e /data/planted && echo planted; test -e /data/planted || echo held; : " + testMarker
			r := p.run(t, append(p.runArgs(flags...), p.image, "sh", "-c", script)...)
			id := strings.TrimSpace(r.stdout)
			if r.code != 0 || id == "" {
				t.Fatalf("podman run -d: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			defer p.run(t, "rm", "-f", id)
			if tc.kill && !killSupervisor(t, id) {
				t.Fatalf("no supervisor of container %s found to kill", id)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := p.run(t, "wait", id); strings.TrimSpace(r.stdout) == "" {
				t.Fatalf("podman wait: exit %d stderr %q", r.code, r.stderr)
			}
			logs := p.run(t, "logs", id)
			if !tc.annotated {
				if !strings.Contains(logs.stdout, "written") || !strings.Contains(logs.stdout, "planted") {
					t.Errorf("without annotations: stdout %q stderr %q; want the file written through the container's own listener", logs.stdout, logs.stderr)
				}
				return
			}
			if tc.pidHost && !strings.Contains(logs.stdout, "killed") {
				t.Errorf("stdout %q stderr %q; the container found no supervisor to kill", logs.stdout, logs.stderr)
			}
			if strings.Contains(logs.stdout, "written") || strings.Contains(logs.stdout, "planted") || !strings.Contains(logs.stdout, "held") {
				t.Errorf("stdout %q stderr %q; want the container's own listener refused and /data/planted missing", logs.stdout, logs.stderr)
			}
			if !strings.Contains(logs.stderr, "seccomp: Device or resource busy") {
				t.Errorf("stderr %q; want seccomp(NEW_LISTENER) refused with EBUSY", logs.stderr)
			}
		})
	}
}

// TestOCIStartWithoutSupervisor: a container whose supervisor ended
// between create and start (killed here) is not started: its command
// would run with every brokered call failing and no network. start fails
// naming the supervisor and the fix, the container stays created and its
// command never runs; with the supervisor alive the same start runs it
// (the test can fail). Root, and rootless (a user namespace of its own).
func TestOCIStartWithoutSupervisor(t *testing.T) {
	testenv.SkipIfShort(t, "starts containers with cordon-oci")
	if os.Geteuid() != 0 && os.Getenv("CORDON_ROOTLESS") != "1" {
		requireRoot(t)
	}
	for _, tc := range []struct {
		name string
		kill bool
	}{{"supervisor alive", false}, {"supervisor killed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			// The broker's socket is under --root: t.TempDir's names are
			// too long for a socket's path.
			root, err := os.MkdirTemp("", "oci")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			log := filepath.Join(t.TempDir(), "log")
			id := "cordon-oci-test-nosup-" + strings.Fields(tc.name)[1]
			oci := func(args ...string) result {
				return runCmd(t, nil, ociBin, append([]string{"--root", root, "--log", log}, args...)...)
			}
			bundle := writeBundle(t, id, []string{"sleep", testMarker})
			annotate(t, bundle, map[string]string{"run.cordon.protect": "/etc/app.conf"})
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
			if tc.kill {
				if !killSupervisor(t, id) {
					t.Fatalf("no supervisor of container %s found to kill", id)
				}
				for supervisorPid(id) != 0 {
					time.Sleep(10 * time.Millisecond)
				}
			}
			r := oci("start", id)
			if !tc.kill {
				if r.code != 0 || status(t, oci("state", id)) != "running" {
					t.Fatalf("start with the supervisor alive: %+v", r)
				}
				return
			}
			b, _ := os.ReadFile(log)
			if r.code == 0 || !strings.Contains(string(b), "supervisor") || !strings.Contains(string(b), "delete the container and create it again") {
				t.Errorf("start: exit %d; log %s; want start refused naming the supervisor and the fix", r.code, b)
			}
			if s := status(t, oci("state", id)); s != "created" {
				t.Errorf("after the refused start the container is %q, not created", s)
			}
			assertNoProcess(t, testMarker)
		})
	}
}

// annotate adds annotations to the bundle's config.json.
func annotate(t *testing.T, bundle string, a map[string]string) {
	t.Helper()
	path := filepath.Join(bundle, "config.json")
	var s specs.Spec
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	maps.Copy(s.Annotations, a)
	if data, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// supervisorPid is the pid of container id's supervisor (0: none).
func supervisorPid(id string) int {
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range pids {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), "__broker\x00") && strings.Contains(string(b), `"id":"`+id+`"`) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	return 0
}

// TestOCINetworkRefusesNetDevices: a spec whose linux.netDevices moves a
// host network device into the container's namespace gives the container
// a route out beside the guard's device (the device keeps its addresses,
// and with them their routes). create refuses the allow list naming the
// field, and the device stays on the host. Root (a user cannot move a
// device; a rootless bundle's user namespace is refused before).
func TestOCINetworkRefusesNetDevices(t *testing.T) {
	requireRoot(t)
	requireTool(t, "ip")
	// A veth pair: dev is moved, its peer stays (deleting it deletes both).
	dev := "crnd" + strconv.Itoa(os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", dev+"h", "type", "veth", "peer", "name", dev).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", dev+"h").Run() })
	root, err := os.MkdirTemp("", "oci")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	log := filepath.Join(t.TempDir(), "log")
	id := "cordon-oci-test-netdevices"
	bundle := writeBundle(t, id, []string{"sleep", testMarker})
	annotate(t, bundle, map[string]string{"run.cordon.network.allow": "example.com:443"})
	path := filepath.Join(bundle, "config.json")
	var s specs.Spec
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Linux.NetDevices = map[string]specs.LinuxNetDevice{dev: {}}
	if data, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	create := exec.Command(ociBin, "--root", root, "--log", log, "create", "--bundle", bundle, id)
	create.Stdin, create.Stdout, create.Stderr = null, null, null
	err = create.Run()
	t.Cleanup(func() { runCmd(t, nil, ociBin, "--root", root, "delete", "--force", id) })
	b, _ := os.ReadFile(log)
	if err == nil || !strings.Contains(string(b), "linux.netDevices") || !strings.Contains(string(b), dev) {
		t.Errorf("create: %v; log %s; want the allow list refused naming linux.netDevices and %s", err, b, dev)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", dev)); err != nil {
		t.Errorf("the device %s left the host: %v", dev, err)
	}
	if _, err := os.Stat(filepath.Join(root, id)); !os.IsNotExist(err) {
		t.Errorf("the refused container's state directory is left (%v)", err)
	}
}
