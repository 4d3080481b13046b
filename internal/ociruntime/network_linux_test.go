package ociruntime_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// netScript asks the test host's HTTP server at addr:port with busybox
// nc, printing "reached" when it answered.
func netScript(addr string, port int) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\nHost: %[1]s:%[2]d\r\n\r\n' | nc -w 10 %[1]s %[2]d | grep -q 'hello from the test host' && echo reached`, addr, port)
}

// TestOCINetworkAllow runs a container with run.cordon.network.allow
// naming the test host's HTTP server: it reaches it, and the host's other
// port (not listed) is refused by the guard, typed in the audit log, and
// never reached. Root and rootless podman.
func TestOCINetworkAllow(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	h := nettest.NewHost(t, "allowed.test")
	addr := h.Addr.String()
	auditLog := filepath.Join(p.auditDir, "net.jsonl")
	flags := []string{"--annotation", fmt.Sprintf("run.cordon.network.allow=%s:%d", addr, h.HTTPPort), "--annotation", "run.cordon.audit=" + auditLog}
	script := netScript(addr, h.HTTPPort) + "; echo next; " + netScript(addr, h.HTTPSPort) + "; : " + testMarker
	args := append(p.runArgs(append([]string{"--rm"}, flags...)...), p.image, "sh", "-c", script)
	r := p.run(t, args...)
	if r.code != 0 || r.stdout != "reached\nnext\n" {
		t.Fatalf("exit %d stdout %q stderr %q; want the allowed server reached and the other refused", r.code, r.stdout, r.stderr)
	}
	recs := readJSONLines(t, auditLog)
	var allowed, denied bool
	for _, rec := range recs {
		n, _ := rec["network"].(map[string]any)
		if rec["event"] != "net" || n == nil || n["addr"] != addr {
			continue
		}
		port := fmt.Sprint(n["port"])
		allowed = allowed || (n["decision"] == "allow" && port == fmt.Sprint(h.HTTPPort))
		denied = denied || (n["decision"] == "deny" && port == fmt.Sprint(h.HTTPSPort) && n["reason"] != "")
	}
	if !allowed || !denied {
		t.Errorf("the audit log lacks the allowed (%v) or the refused (%v) connection: %v", allowed, denied, recs)
	}
	for _, s := range h.Served() {
		if strings.Contains(s, fmt.Sprint(h.HTTPSPort)) {
			t.Errorf("the refused port was reached: %q", s)
		}
	}
}

// TestOCINetworkRefused: an allow list on a container whose network the
// guard cannot stand in front of (the host's) fails create, naming the
// annotation and what to do, and nothing runs.
func TestOCINetworkRefused(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	marker := filepath.Join(p.dir, "ran")
	args := []string{"run", "--rm", "--network", "host", "-v", p.dir + ":/host", "--annotation", "run.cordon.network.allow=example.com:443"}
	if os.Geteuid() == 0 {
		args = append(args, "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=20000:20000")
	}
	r := p.run(t, append(args, p.image, "touch", "/host/ran")...)
	if r.code == 0 || !strings.Contains(r.stderr, "annotation run.cordon.network.allow") || !strings.Contains(r.stderr, "host's network") {
		t.Errorf("exit %d stderr %q; want create refused naming the annotation and the host's network", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the refused container's command ran")
	}
}

// TestOCICtrNetworkAllow: the same through containerd's shim, whose
// runtime log has the refusal typed.
func TestOCICtrNetworkAllow(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	h := nettest.NewHost(t, "allowed.test")
	addr := h.Addr.String()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(out, 0o777); err != nil {
		t.Fatal(err)
	}
	script := "(" + netScript(addr, h.HTTPPort) + "; echo next; " + netScript(addr, h.HTTPSPort) + ") >/out/result"
	r := c.ctr(t, append(runArgs("-d", "--annotation", fmt.Sprintf("run.cordon.network.allow=%s:%d", addr, h.HTTPPort),
		"--mount", "type=bind,src="+out+",dst=/out,options=rbind:rw"), "net1", "/bin/sh", "-c", script)...)
	if r.code != 0 {
		t.Fatalf("run -d: %d %s", r.code, r.stderr)
	}
	c.waitStopped(t, "net1")
	recs := readJSONLines(t, filepath.Join(c.dir, "state", "io.containerd.runtime.v2.task", ctrNamespace, "net1", "log.json"))
	c.ctr(t, "task", "rm", "net1")
	c.ctr(t, "container", "rm", "net1")
	if got, _ := os.ReadFile(filepath.Join(out, "result")); string(got) != "reached\nnext\n" {
		t.Errorf("output %q; want the allowed server reached and the other refused", got)
	}
	if !hasRecord(recs, map[string]string{"cordon": "refused", "rule": "network", "addr": addr, "level": "warning"}) {
		t.Errorf("no typed refusal in the runtime log: %v", recs)
	}
	r = c.ctr(t, append(runArgs("--rm", "--net-host", "--annotation", "run.cordon.network.allow=example.com:443"), "net2", "/bin/true")...)
	if r.code == 0 || !strings.Contains(r.stderr, "annotation run.cordon.network.allow") {
		t.Errorf("--net-host: exit %d stderr %q; want create refused naming the annotation", r.code, r.stderr)
	}
	c.ctr(t, "container", "rm", "net2")
}

// TestOCINetworkSlowSupervisor holds the allow list while the supervisor
// is still starting: create hands the container over without waiting for
// it (handoff_linux.go; with the allow list alone it starts the supervisor
// only after the handoff, guardonly_linux.go), and this test binary's
// cordon-oci (built with cordon_testhooks) sleeps 2 s before its
// supervisor does anything. The container's first action connects to the
// allowed port and then to a port the list does not name: the first waits
// in the guard's device and is let through once the guard is up, the
// second is refused, typed in the audit log (brokered, with
// run.cordon.audit) or the runtime log (the allow list alone), and never
// reached. The container's first action is checked to come before the
// supervisor was ready (the host's uptime, which both see). Root and
// rootless podman.
func TestOCINetworkSlowSupervisor(t *testing.T) {
	requirePodmanUser(t)
	delay := filepath.Join(filepath.Dir(resolvedOCIBin(t)), "cordon-oci-test-supervisor-delay")
	if err := os.WriteFile(delay, []byte("2s\n"), 0o644); err != nil {
		t.Skipf("the test binary's directory is not writable (%v)", err)
	}
	ready := filepath.Join(filepath.Dir(delay), "cordon-oci-test-supervisor-ready")
	t.Cleanup(func() { os.Remove(delay); os.Remove(ready) })
	p := newPodman(t)
	h := nettest.NewHost(t, "allowed.test")
	addr := h.Addr.String()
	for _, audited := range []bool{true, false} {
		t.Run(map[bool]string{true: "audited", false: "allow list alone"}[audited], func(t *testing.T) {
			os.Remove(ready)
			logPath := filepath.Join(p.auditDir, "slow.jsonl")
			if !audited {
				logPath = filepath.Join(p.dir, "slow-runtime.jsonl")
			}
			q := *p
			flags := []string{"--annotation", fmt.Sprintf("run.cordon.network.allow=%s:%d", addr, h.HTTPPort)}
			if audited {
				flags = append(flags, "--annotation", "run.cordon.audit="+logPath)
			} else {
				q.base = append(slices.Clone(p.base), "--runtime-flag", "log="+logPath, "--runtime-flag", "log-format=json")
			}
			script := "cut -d' ' -f1 /proc/uptime; " + netScript(addr, h.HTTPPort) + "; echo next; " + netScript(addr, h.HTTPSPort) + "; : " + testMarker
			args := append(q.runArgs(append([]string{"--rm"}, flags...)...), q.image, "sh", "-c", script)
			r := q.run(t, args...)
			started, rest, _ := strings.Cut(r.stdout, "\n")
			if r.code != 0 || rest != "reached\nnext\n" {
				t.Fatalf("exit %d stdout %q stderr %q; want the allowed server reached and the other refused", r.code, r.stdout, r.stderr)
			}
			b, err := os.ReadFile(ready)
			if err != nil {
				t.Fatalf("the supervisor never slowed (is the binary built with -tags cordon_testhooks?): %v", err)
			}
			up, _, _ := strings.Cut(string(b), " ")
			if s, u := parseSeconds(t, started), parseSeconds(t, up); s >= u {
				t.Errorf("the container started at %.2f s, after its supervisor was ready at %.2f s: create waited for it", s, u)
			}
			var denied bool
			for _, rec := range readJSONLines(t, logPath) {
				n, _ := rec["network"].(map[string]any)
				denied = denied || (rec["event"] == "net" && n != nil && n["decision"] == "deny" && fmt.Sprint(n["port"]) == fmt.Sprint(h.HTTPSPort))
				denied = denied || (rec["cordon"] == "refused" && rec["rule"] == "network" && fmt.Sprint(rec["port"]) == fmt.Sprint(h.HTTPSPort))
			}
			if !denied {
				t.Errorf("the log %s lacks the refused connection to port %d", logPath, h.HTTPSPort)
			}
		})
	}
	for _, s := range h.Served() {
		if strings.Contains(s, fmt.Sprint(h.HTTPSPort)) {
			t.Errorf("the refused port was reached while the supervisor started: %q", s)
		}
	}
}

func parseSeconds(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		t.Fatalf("uptime %q: %v", s, err)
	}
	return f
}

// resolvedOCIBin is the cordon binary cordon-oci links to.
func resolvedOCIBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(ociBin)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOCINetworkSupervisorGone: a supervisor that dies before it serves
// the container (killed while this test build's hook holds it at its
// start) leaves nothing open: the container's connection to the allowed
// port, made after, fails (the guard's device went with the supervisor,
// and with it the only route), and the host is never reached. Root and
// rootless podman.
func TestOCINetworkSupervisorGone(t *testing.T) {
	requirePodmanUser(t)
	delay := filepath.Join(filepath.Dir(resolvedOCIBin(t)), "cordon-oci-test-supervisor-delay")
	if err := os.WriteFile(delay, []byte("60s\n"), 0o644); err != nil {
		t.Skipf("the test binary's directory is not writable (%v)", err)
	}
	t.Cleanup(func() { os.Remove(delay) })
	p := newPodman(t)
	h := nettest.NewHost(t, "allowed.test")
	addr := h.Addr.String()
	flags := []string{"-d", "--annotation", fmt.Sprintf("run.cordon.network.allow=%s:%d", addr, h.HTTPPort)}
	script := "sleep 2; " + netScript(addr, h.HTTPPort) + "; echo done; : " + testMarker
	r := p.run(t, append(p.runArgs(flags...), p.image, "sh", "-c", script)...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("podman run -d: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !killSupervisor(t, id) {
		t.Fatalf("no supervisor of container %s found to kill", id)
	}
	if r := p.run(t, "wait", id); strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("podman wait: exit %d stderr %q", r.code, r.stderr)
	}
	logs := p.run(t, "logs", id)
	t.Logf("the container: %q %q", logs.stdout, logs.stderr)
	p.run(t, "rm", "-f", id)
	if strings.Contains(logs.stdout, "reached") || !strings.Contains(logs.stdout, "done") {
		t.Errorf("container output %q (stderr %q); want the connection failed and the script done", logs.stdout, logs.stderr)
	}
	if s := h.Served(); len(s) != 0 {
		t.Errorf("the host was reached with no supervisor: %q", s)
	}
}

// killSupervisor kills the supervisor (cordon-oci __broker) of container
// id, found by its command line.
func killSupervisor(t *testing.T, id string) bool {
	t.Helper()
	pids, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range pids {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), "__broker\x00") || !strings.Contains(string(b), `"id":"`+id+`"`) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the supervisor %d: %v", pid, err)
		}
		return true
	}
	return false
}
