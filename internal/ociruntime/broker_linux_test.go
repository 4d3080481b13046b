package ociruntime_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plants are what a container tries against run.cordon.protect: each is
// refused by cordon's broker, and check prints "held" when its side effect
// is absent.
var plants = []struct {
	name, try, check, path string
}{
	{"plant a git hook", "echo x > /repo/.git/hooks/x", "test ! -e /repo/.git/hooks/x", "/repo/.git/hooks/x"},
	{"rename over a protected file", "echo z > /tmp/f && mv /tmp/f /etc/app.conf", `test "$(cat /etc/app.conf)" = cfg`, "/etc/app.conf"},
	{"rename the repository away", "mv /repo/.git /repo/moved", "test -e /repo/.git/HEAD && test ! -e /repo/moved", "/repo/.git"},
	{"create a missing protected path", "mkdir /missing", "test ! -e /missing", "/missing"},
	{"remove a protected file", "rm /etc/app.conf", "test -e /etc/app.conf", "/etc/app.conf"},
}

const plantProtect = "/repo/.git,/etc/app.conf,/missing"

// plantScript tries, then checks, in one container.
func plantScript(try, check string) string {
	return "(" + try + ") 2>/dev/null && echo planted; " + check + " && echo held; : " + testMarker
}

// TestOCIBrokerProtectHeld runs each plant under podman with
// run.cordon.protect and run.cordon.audit: the broker refuses it, the
// audit log has the refusal typed (event denial, rule protect, the path),
// and the side effect is absent. Root and rootless podman.
func TestOCIBrokerProtectHeld(t *testing.T) {
	requirePodmanUser(t)
	p := newPodman(t)
	for i, tc := range plants {
		t.Run(tc.name, func(t *testing.T) {
			auditLog := filepath.Join(p.auditDir, "audit"+string(rune('a'+i))+".jsonl")
			flags := append(annotation("run.cordon.protect", plantProtect), "--annotation", "run.cordon.audit="+auditLog)
			args := append(p.runArgs(append([]string{"--rm"}, flags...)...), p.image, "sh", "-c", plantScript(tc.try, tc.check))
			r := p.run(t, args...)
			if r.code != 0 || strings.Contains(r.stdout, "planted") || !strings.Contains(r.stdout, "held") {
				t.Errorf("exit %d stdout %q stderr %q; want the plant refused and its side effect absent", r.code, r.stdout, r.stderr)
			}
			recs := readJSONLines(t, auditLog)
			if len(recs) == 0 || recs[0]["event"] != "start" {
				t.Fatalf("the audit log starts with %v, want a start record", recs)
			}
			if !hasRecord(recs, map[string]string{"event": "denial", "rule": "protect", "path": tc.path}) {
				t.Errorf("no denial of %s with rule protect in the audit log: %v", tc.path, recs)
			}
		})
	}
	// Without the annotations the same plant lands: the test can fail.
	args := append(p.runArgs("--rm"), p.image, "sh", "-c", plantScript(plants[0].try, plants[0].check))
	if r := p.run(t, args...); !strings.Contains(r.stdout, "planted") || strings.Contains(r.stdout, "held") {
		t.Errorf("without annotations: exit %d stdout %q stderr %q; want the hook planted", r.code, r.stdout, r.stderr)
	}
}

// TestOCIBrokerRuntimeLog runs the plants through containerd's shim,
// which gives cordon-oci a JSON runtime log: each refusal is there, typed
// (cordon refused, its op, path and rule), and the test's root
// filesystem (the container's, shared with the host) is unchanged.
func TestOCIBrokerRuntimeLog(t *testing.T) {
	requireRoot(t)
	c := newContainerd(t)
	for i, tc := range plants {
		t.Run(tc.name, func(t *testing.T) {
			id := "plant" + string(rune('a'+i))
			out := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(out, 0o777); err != nil {
				t.Fatal(err)
			}
			// Detached, so that the task (and its runtime log) stays
			// until it is removed; the output goes to a bind mount.
			r := c.ctr(t, append(runArgs("-d", "--annotation", "run.cordon.protect="+plantProtect,
				"--mount", "type=bind,src="+out+",dst=/out,options=rbind:rw"),
				id, "/bin/sh", "-c", "("+plantScript(tc.try, tc.check)+") >/out/result")...)
			if r.code != 0 {
				t.Fatalf("run -d: %d %s", r.code, r.stderr)
			}
			c.waitStopped(t, id)
			logPath := filepath.Join(c.dir, "state", "io.containerd.runtime.v2.task", ctrNamespace, id, "log.json")
			recs := readJSONLines(t, logPath)
			c.ctr(t, "task", "rm", id)
			c.ctr(t, "container", "rm", id)
			got, _ := os.ReadFile(filepath.Join(out, "result"))
			if strings.Contains(string(got), "planted") || !strings.Contains(string(got), "held") {
				t.Errorf("output %q; want the plant refused and its side effect absent", got)
			}
			if !hasRecord(recs, map[string]string{"cordon": "refused", "level": "warning", "path": tc.path}) {
				t.Errorf("no refusal of %s in the runtime log: %v", tc.path, recs)
			}
			for _, rec := range recs {
				if rec["cordon"] == "refused" && !strings.HasPrefix(rec["rule"].(string), "protect ") {
					t.Errorf("a refusal without its protect rule: %v", rec)
				}
			}
		})
	}
	for _, f := range []string{"repo/.git/hooks/x", "missing", "repo/moved"} {
		if _, err := os.Lstat(filepath.Join(rootfs, f)); err == nil {
			t.Errorf("%s landed in the container's root", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(rootfs, "etc", "app.conf")); err != nil || string(b) != "cfg\n" {
		t.Errorf("/etc/app.conf is %q (%v), want cfg", b, err)
	}
}

// waitStopped waits for task id to stop (generously: a loaded machine).
func (c *containerd) waitStopped(t *testing.T, id string) {
	t.Helper()
	for i := 0; ; i++ {
		r := c.ctr(t, "task", "ls")
		for _, l := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == id && f[2] == "STOPPED" {
				return
			}
		}
		if i == 600 {
			t.Fatalf("task %s did not stop in 60s: %s", id, r.stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readJSONLines reads a JSON-lines file (missing: none).
func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: a line that is not JSON: %q", path, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// hasRecord reports whether a record has every field of want.
func hasRecord(recs []map[string]any, want map[string]string) bool {
	for _, r := range recs {
		ok := true
		for k, v := range want {
			if s, _ := r[k].(string); s != v {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
