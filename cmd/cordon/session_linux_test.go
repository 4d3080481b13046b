package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/testenv"
)

// sessionUser runs the cordon binary as root or, rootless, as an
// unprivileged uid through setpriv, with its own TMPDIR (and so its own
// state directory).
type sessionUser struct {
	name   string
	prefix []string // setpriv ... env ..., or nil
	env    []string
	bin    string
	state  string // the state directory the binary uses
	ws     string
}

func (u sessionUser) cmd(stdin string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, u.prefix...), u.bin), args...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = u.ws
	c.Env = append(os.Environ(), u.env...)
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	return c
}

func (u sessionUser) run(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	c := u.cmd(stdin, args...)
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	err := c.Run()
	r := cliResult{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("cordon %v: %v", args, err)
	}
	return r
}

// sessionUsers is root, plus uid 4242 through setpriv when the test runs as
// root (as hack/test-rootless.sh does for the other suites).
func sessionUsers(t *testing.T) []sessionUser {
	t.Helper()
	testenv.RequireSandbox(t)
	ws := t.TempDir()
	if os.Geteuid() != 0 {
		return []sessionUser{{name: "rootless", bin: cordonBin(t), ws: ws, state: stateDirFor(os.Getenv("TMPDIR"), os.Geteuid())}}
	}
	users := []sessionUser{{name: "root", bin: cordonBin(t), ws: ws, state: "/run/cordon"}}
	if _, err := exec.LookPath("setpriv"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("setpriv is needed for the rootless pass and CI=true forbids skipping")
		}
		return users
	}
	const uid = 4242
	home, err := os.MkdirTemp("", "cordon-session-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	bin := filepath.Join(home, "cordon")
	data, err := os.ReadFile(cordonBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	rws := filepath.Join(home, "ws")
	if err := os.Mkdir(rws, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home, bin, rws} {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := []string{"setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "--reset-env", "env",
		"HOME=" + home, "TMPDIR=" + home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	users = append(users, sessionUser{name: "rootless", prefix: prefix, bin: bin, ws: rws, state: stateDirFor(home, uid)})
	return users
}

func stateDirFor(tmp string, uid int) string {
	if uid == 0 {
		return "/run/cordon"
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	return filepath.Join(tmp, "cordon-"+strconv.Itoa(uid))
}

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), time.Now().UnixNano()%1e9)
}

// startNamed starts a session and stops it when the test ends.
func startNamed(t *testing.T, u sessionUser, name string, flags ...string) {
	t.Helper()
	r := u.run(t, "", append([]string{"session", "start", "--name", name}, flags...)...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != name {
		t.Fatalf("session start: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	t.Cleanup(func() { u.run(t, "", "session", "stop", name) })
}

type sessionInfo struct {
	PID int    `json:"pid"`
	ID  string `json:"id"`
}

func readSessionInfo(t *testing.T, u sessionUser, name string) sessionInfo {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(u.state, "sessions", name, "info.json"))
	if err != nil {
		t.Fatalf("session info: %v", err)
	}
	var i sessionInfo
	if err := json.Unmarshal(data, &i); err != nil {
		t.Fatal(err)
	}
	return i
}

func initPIDOf(t *testing.T, u sessionUser, id string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(u.state, "lc", id, "state.json"))
	if err != nil {
		t.Fatalf("container state of %s: %v", id, err)
	}
	var st struct {
		Pid int `json:"init_process_pid"`
	}
	if err := json.Unmarshal(data, &st); err != nil || st.Pid == 0 {
		t.Fatalf("container state of %s: %v", id, err)
	}
	return st.Pid
}

// noLeftovers checks that session name (sandbox id, init pid) left nothing:
// no process, no mount, no state, no cgroup, no socket. It polls: the
// supervisor or its reaper may still be removing them.
func noLeftovers(t *testing.T, u sessionUser, name, id string, pid int) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; {
		left = leftoversOf(u, name, id, pid)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, l := range left {
		t.Errorf("left after the session ended: %s", l)
	}
}

func leftoversOf(u sessionUser, name, id string, pid int) []string {
	var left []string
	if err := unix.Kill(pid, 0); !errors.Is(err, unix.ESRCH) {
		left = append(left, fmt.Sprintf("the session's init %d (%v)", pid, err))
	}
	for _, p := range []string{
		filepath.Join(u.state, "sessions", name), filepath.Join(u.state, "runs", id), filepath.Join(u.state, "lc", id),
		"/sys/fs/cgroup/memory/cordon/" + id, "/sys/fs/cgroup/pids/cordon/" + id, "/sys/fs/cgroup/unified/cordon/" + id, "/sys/fs/cgroup/cordon/" + id,
	} {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && bytes.Contains(mi, []byte(id)) {
		left = append(left, "a mount of "+id+" in /proc/self/mountinfo")
	}
	// Every process of the sandbox sits in a cgroup named after its id.
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		if cg, err := os.ReadFile(p); err == nil && bytes.Contains(cg, []byte(id)) {
			left = append(left, "a process of the sandbox: "+filepath.Dir(p))
		}
	}
	return left
}

func TestSessionCLI(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("cli")
			startNamed(t, u, name)
			r := u.run(t, "", "exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
			if r.code != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
				t.Fatalf("exec: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if r := u.run(t, "some input\n", "exec", name, "--", "cat"); r.code != 0 || r.stdout != "some input\n" {
				t.Fatalf("stdin: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			if r := u.run(t, "", "exec", name, "--cwd", "/tmp", "--", "pwd"); r.stdout != "/tmp\n" {
				t.Fatalf("--cwd: %q %s", r.stdout, r.stderr)
			}
			checkExecDirs(t, u, name)
			// A boundary refusal is typed per exec, with the report of run.
			report := filepath.Join(u.ws, "report.json")
			r = u.run(t, "", "exec", name, "--report", report, "--", "sh", "-c", "echo x > /usr/cordon-cli-probe")
			if r.code == 0 || !strings.Contains(r.stderr, "cordon: sandbox_denied:") {
				t.Fatalf("write to /usr: exit %d stderr %s", r.code, r.stderr)
			}
			var res struct {
				ExitCode    int    `json:"exit_code"`
				FailureType string `json:"failure_type"`
				BlockedPath string `json:"blocked_path"`
				Backend     string `json:"backend"`
			}
			data, err := os.ReadFile(report)
			if err != nil || json.Unmarshal(data, &res) != nil {
				t.Fatalf("report: %v %s", err, data)
			}
			if res.FailureType != "sandbox_denied" || res.BlockedPath != "/usr/cordon-cli-probe" || res.ExitCode != r.code || res.Backend == "" {
				t.Fatalf("report: %+v", res)
			}
			if _, err := os.Lstat("/usr/cordon-cli-probe"); err == nil {
				t.Fatal("the write reached the host")
			}
			if r := u.run(t, "", "exec", name, "--timeout", "300ms", "--", "sh", "-c", "sleep 100 & sleep 100"); r.code != 124 || !strings.Contains(r.stderr, "timeout") {
				t.Fatalf("--timeout: exit %d stderr %s", r.code, r.stderr)
			}
			if r := u.run(t, "", "session", "list"); !strings.Contains(r.stdout, name) {
				t.Fatalf("session list lacks %s:\n%s", name, r.stdout)
			}
			// 20 concurrent clients.
			var wg sync.WaitGroup
			errs := make(chan string, 20)
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					r := u.run(t, "", "exec", name, "--", "sh", "-c", fmt.Sprintf("echo %d", i))
					if r.code != 0 || r.stdout != fmt.Sprintf("%d\n", i) {
						errs <- fmt.Sprintf("exec %d: exit %d %q %s", i, r.code, r.stdout, r.stderr)
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}

			info := readSessionInfo(t, u, name)
			pid := initPIDOf(t, u, info.ID)
			if r := u.run(t, "", "session", "stop", name); r.code != 0 {
				t.Fatalf("stop: exit %d %s", r.code, r.stderr)
			}
			r = u.run(t, "", "exec", name, "--json", "--", "true")
			if r.code != 125 || !strings.Contains(r.stderr, "cordon: session_gone: session "+name+" is not running") ||
				!strings.Contains(r.stderr, `"failure_type": "session_gone"`) {
				t.Fatalf("exec after stop: exit %d stderr %s", r.code, r.stderr)
			}
			noLeftovers(t, u, name, info.ID, pid)
		})
	}
}

// checkExecDirs: as with cordon run, an exec runs in the caller's directory
// when the sandbox shows it, else in the workspace with a note; --cwd
// outside the sandbox is refused (exit 2) with a fix, and nothing runs.
func checkExecDirs(t *testing.T, u sessionUser, name string) {
	t.Helper()
	sub := filepath.Join(u.ws, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if u.prefix != nil {
		if err := os.Chown(sub, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	c := u.cmd("", "exec", name, "--", "pwd")
	c.Dir = sub
	if out, err := c.Output(); err != nil || string(out) != sub+"\n" {
		t.Fatalf("exec from %s: %q %v", sub, out, err)
	}
	c = u.cmd("", "exec", name, "--", "pwd")
	c.Dir = "/"
	var se bytes.Buffer
	c.Stderr = &se
	if out, err := c.Output(); err != nil || string(out) != u.ws+"\n" ||
		!strings.Contains(se.String(), "cordon: note: the current directory / is not in the sandbox; the command runs in "+u.ws) {
		t.Fatalf("exec from /: %q %v %s", out, err, se.String())
	}
	if r := u.run(t, "", "exec", name, "--cwd", "sub", "--", "pwd"); r.code != 0 || r.stdout != sub+"\n" {
		t.Fatalf("--cwd sub: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	marker := filepath.Join(u.ws, "cwd-marker")
	r := u.run(t, "", "exec", name, "--cwd", "/nonexistent-cordon", "--", "touch", marker)
	if r.code != 2 || !strings.Contains(r.stderr, "cordon exec: --cwd /nonexistent-cordon") || !strings.Contains(r.stderr, "fix:") {
		t.Fatalf("--cwd outside the sandbox: exit %d %s", r.code, r.stderr)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("the command ran despite the refused --cwd")
	}
}

// SIGKILL of the supervisor ends the sandbox at once (its init sees EOF on
// the control socket), and the session's reaper removes what was left on
// the host at once, with no other cordon command: processes (a detached
// setsid one included), mounts, cgroups, state and the session's socket.
// Later execs are refused with session_gone.
func TestSessionCLISupervisorKilled(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("kill")
			startNamed(t, u, name)
			if r := u.run(t, "", "exec", name, "--detach", "--", "sh", "-c", "setsid sleep 300 >/dev/null 2>&1 &"); r.code != 0 {
				t.Fatalf("detached exec: %d %s", r.code, r.stderr)
			}
			info := readSessionInfo(t, u, name)
			pid := initPIDOf(t, u, info.ID)
			if left := leftoversOf(u, name, info.ID, pid); len(left) == 0 {
				t.Fatal("the running session shows none of what the check looks for")
			}
			if err := unix.Kill(info.PID, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			noLeftovers(t, u, name, info.ID, pid)
			r := u.run(t, "", "exec", name, "--", "true")
			if r.code != 125 || !strings.Contains(r.stderr, "session_gone") {
				t.Fatalf("exec after the supervisor was killed: exit %d stderr %s", r.code, r.stderr)
			}
			if r := u.run(t, "", "session", "list"); r.code != 0 || strings.Contains(r.stdout, name) {
				t.Fatalf("session list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// SIGINT to `cordon exec` reaches the command (its process group), as for
// `cordon run`; killing the client kills the command's whole tree.
func TestSessionCLISignals(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("sig")
			startNamed(t, u, name)
			c := u.cmd("", "exec", name, "--", "sh", "-c", `trap 'echo got INT; exit 7' INT; echo ready; sleep 30 & wait`)
			var so bytes.Buffer
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			c.Stdout = pw
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			buf := make([]byte, 6)
			if _, err := pr.Read(buf); err != nil || string(buf) != "ready\n" {
				t.Fatalf("no ready line: %q %v", buf, err)
			}
			if err := c.Process.Signal(unix.SIGINT); err != nil {
				t.Fatal(err)
			}
			_, _ = so.ReadFrom(pr)
			err = c.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 || so.String() != "got INT\n" {
				t.Fatalf("after SIGINT: %v, stdout %q", err, so.String())
			}

			// The client killed: the exec's tree dies with it.
			c = u.cmd("", "exec", name, "--", "sh", "-c", "setsid sleep 301 & sleep 302")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			_ = c.Process.Kill()
			_ = c.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for {
				r := u.run(t, "", "exec", name, "--", "sh", "-c", "cat /proc/[0-9]*/comm | grep -c sleep")
				if strings.TrimSpace(r.stdout) == "0" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the killed client's processes survive: %q %s", r.stdout, r.stderr)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// session.idle_timeout in the config stops a CLI session by itself, and
// nothing is left.
func TestSessionCLIIdleTimeout(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("idle")
			cfg := filepath.Join(u.ws, "idle.yaml")
			if err := os.WriteFile(cfg, []byte("sandbox:\n  root: .\nsession:\n  idle_timeout: 500ms\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if u.prefix != nil {
				_ = os.Chown(cfg, 4242, 4242)
			}
			startNamed(t, u, name, "--config", cfg)
			info := readSessionInfo(t, u, name)
			pid := initPIDOf(t, u, info.ID)
			if r := u.run(t, "", "exec", name, "--", "sleep", "0.8"); r.code != 0 {
				t.Fatalf("an exec longer than the idle timeout: %d %s", r.code, r.stderr)
			}
			// No exec for longer than the idle timeout (an exec would
			// restart it).
			deadline := time.Now().Add(5 * time.Second)
			for {
				if _, err := os.Lstat(filepath.Join(u.state, "sessions", name)); err != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the idle session is still up")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if r := u.run(t, "", "exec", name, "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "session_gone") {
				t.Fatalf("exec after the idle timeout: %d %s", r.code, r.stderr)
			}
			noLeftovers(t, u, name, info.ID, pid)
		})
	}
}

// TestSessionCLIExecMemoryRefusedWithoutLeaves: `cordon exec --memory`
// narrows the session's memory for one command only where each exec has a
// cgroup of its own (cgroup v2; the VM lane's sessionleaf case tests that).
// Here (cgroup v1) the exec is refused with setup_error and a fix, and the
// command never runs: it would otherwise run without the limit it asked
// for. A size that is no size is a usage error.
func TestSessionCLIExecMemoryRefusedWithoutLeaves(t *testing.T) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("cgroup v2: per-exec limits apply (hack/vm's sessionleaf case)")
	}
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("mem")
			var flags []string
			if u.name == "root" { // rootless on cgroup v1 has no memory limit at all
				flags = []string{"--memory", "256MiB"}
			}
			startNamed(t, u, name, flags...)
			marker := filepath.Join(u.ws, "ran-with-memory")
			r := u.run(t, "", "exec", name, "--memory", "64MiB", "--", "touch", marker)
			if r.code != 125 || !strings.Contains(r.stderr, "setup_error") || !strings.Contains(r.stderr, "cgroup v1") || !strings.Contains(r.stderr, "fix:") {
				t.Fatalf("exec --memory: exit %d stderr %s", r.code, r.stderr)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Fatal("the command ran although its memory limit could not be applied")
			}
			if r := u.run(t, "", "exec", name, "--memory", "lots", "--", "true"); r.code != 2 || !strings.Contains(r.stderr, "--memory") {
				t.Fatalf("exec --memory lots: exit %d stderr %s", r.code, r.stderr)
			}
			if r := u.run(t, "", "exec", name, "--", "true"); r.code != 0 {
				t.Fatalf("a plain exec after the refusals: exit %d stderr %s", r.code, r.stderr)
			}
		})
	}
}

// A sandbox of the session's own user that can reach the session's socket
// gets nothing from it. Rootless, the state directory follows TMPDIR (or
// XDG_RUNTIME_DIR), so a run with another one may mount this session's:
// its stop request is refused unread, and the session goes on. As root the
// state directory is fixed and such a mount is refused before the run.
func TestSessionSocketRefusesAnotherSandbox(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("sock")
			startNamed(t, u, name)
			parent := filepath.Dir(u.ws)
			other := filepath.Join(parent, "other-tmp")
			if err := os.MkdirAll(other, 0o700); err != nil {
				t.Fatal(err)
			}
			stop := `import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(struct.pack("<IHHIIII", 0x43445243, 1, 2, 0, 0, 0, 0) + bytes(8))
print("reply:", s.recv(200))
`
			cfg := filepath.Join(parent, "other.yaml")
			yaml := fmt.Sprintf("sandbox:\n  root: %s\n  protect_defaults: false\n  mounts:\n    - {source: %s, target: /ctl, readonly: true}\n", u.ws, u.state)
			for p, data := range map[string]string{filepath.Join(u.ws, "stop.py"): stop, cfg: yaml} {
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if u.prefix != nil {
				for _, p := range []string{other, filepath.Join(u.ws, "stop.py"), cfg} {
					if err := os.Chown(p, 4242, 4242); err != nil {
						t.Fatal(err)
					}
				}
			}
			o := u
			if o.prefix != nil {
				o.prefix = append(append([]string{}, u.prefix...), "TMPDIR="+other)
			} else {
				o.env = append(append([]string{}, u.env...), "TMPDIR="+other, "XDG_RUNTIME_DIR=")
			}
			r := o.run(t, "", "run", "--config", cfg, "--", "python3", "stop.py", "/ctl/sessions/"+name+"/sock")
			if o.state == "/run/cordon" {
				if r.code != 125 || !strings.Contains(r.stderr, "state directory") {
					t.Fatalf("a mount of root's state directory: exit %d stderr %s; want it refused", r.code, r.stderr)
				}
			} else if strings.Contains(r.stdout, "reply:") {
				t.Fatalf("the sandbox got an answer from the session's supervisor: %s", r.stdout)
			}
			if r := u.run(t, "", "exec", name, "--", "echo", "alive"); r.code != 0 || r.stdout != "alive\n" {
				t.Fatalf("the session did not go on: exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
