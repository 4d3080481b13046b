package linux_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
	"github.com/cordon-run/cordon/spec"
)

func startSession(t *testing.T, sb *spec.Sandbox) runner.Session {
	t.Helper()
	r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t)})
	if err != nil {
		t.Fatalf("runner.New: %v", err)
	}
	s, err := r.(runner.SessionStarter).StartSession(context.Background(), runner.SessionRequest{Sandbox: sb})
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type execOut struct {
	res            runner.Result
	err            error
	stdout, stderr string
}

func execIn(t *testing.T, s runner.Session, req runner.ExecRequest) execOut {
	t.Helper()
	var so, se bytes.Buffer
	req.Stdout, req.Stderr = &so, &se
	res, err := s.Exec(context.Background(), req)
	t.Logf("%v -> exit %d %s %q; stderr: %s", req.Args, res.ExitCode, res.FailureType, res.FailureDetail, se.String())
	return execOut{res, err, so.String(), se.String()}
}

// initPID is the host pid of the session's PID 1.
func initPID(t *testing.T, s runner.Session) int {
	t.Helper()
	c, err := libcontainer.Load(filepath.Join(stateDir(t), "lc"), s.ID())
	if err != nil {
		t.Fatalf("load session container: %v", err)
	}
	st, err := c.State()
	if err != nil {
		t.Fatalf("container state: %v", err)
	}
	return st.InitProcessPid
}

// sandboxPIDs lists the pids visible inside the session (from a fresh
// exec, which sees itself, its shim and PID 1 too).
func sandboxProcs(t *testing.T, s runner.Session) []string {
	t.Helper()
	out := execIn(t, s, runner.ExecRequest{Args: sh(`for p in /proc/[0-9]*; do echo "$(basename $p) $(cat $p/comm 2>/dev/null)"; done`)})
	if out.res.ExitCode != 0 {
		t.Fatalf("listing processes failed: %+v", out.res)
	}
	return strings.Split(strings.TrimSpace(out.stdout), "\n")
}

func countComm(procs []string, comm string) int {
	n := 0
	for _, p := range procs {
		if f := strings.Fields(p); len(f) == 2 && f[1] == comm {
			n++
		}
	}
	return n
}

func TestIntegrationSessionStdioAndExitCodes(t *testing.T) {
	s := startSession(t, newSandbox(t))
	out := execIn(t, s, runner.ExecRequest{Args: []string{"/bin/cat"}, Stdin: strings.NewReader("hello session\n")})
	if out.res.ExitCode != 0 || out.stdout != "hello session\n" || out.res.FailureType != runner.FailureNone {
		t.Fatalf("cat: %+v stdout %q", out.res, out.stdout)
	}
	for _, c := range []struct {
		args []string
		code int
		ft   runner.FailureType
	}{
		{sh("echo out; echo err >&2; exit 3"), 3, runner.FailureProcessError},
		{[]string{"no-such-command-cordon"}, runner.ExitNotFound, runner.FailureProcessError},
		{sh("kill -TERM $$"), 128 + 15, runner.FailureProcessError},
		{[]string{"true"}, 0, runner.FailureNone},
	} {
		out := execIn(t, s, runner.ExecRequest{Args: c.args})
		if out.res.ExitCode != c.code || out.res.FailureType != c.ft {
			t.Errorf("%v: got exit %d %s, want %d %s", c.args, out.res.ExitCode, out.res.FailureType, c.code, c.ft)
		}
	}
	out = execIn(t, s, runner.ExecRequest{Args: sh("echo out; echo err >&2")})
	if out.stdout != "out\n" || out.stderr != "err\n" {
		t.Errorf("stdout %q stderr %q", out.stdout, out.stderr)
	}
}

// TestIntegrationSessionExecDuration: a session exec's result carries the
// time it took (a deferred assignment once ran after the result was
// copied, so every exec said 0 ms).
func TestIntegrationSessionExecDuration(t *testing.T) {
	s := startSession(t, newSandbox(t))
	out := execIn(t, s, runner.ExecRequest{Args: sh("sleep 0.3")})
	if out.res.ExitCode != 0 || out.res.DurationMS < 300 {
		t.Fatalf("sleep 0.3: exit %d, duration_ms %d; want 0 and at least 300", out.res.ExitCode, out.res.DurationMS)
	}
}

func TestIntegrationSessionFreshProcessState(t *testing.T) {
	sb := newSandbox(t)
	sb.Env.Set = map[string]string{"FIXED": "yes"}
	s := startSession(t, sb)
	// State a command leaves in its shell must not reach the next one.
	execIn(t, s, runner.ExecRequest{Args: sh("export LEAK=1; cd /tmp; exec 7>/tmp/fd7")})
	out := execIn(t, s, runner.ExecRequest{Args: sh(`echo "env:${LEAK:-unset}:${FIXED}:${SECRET:-unset}"; pwd; ls /proc/self/fd | tr '\n' ' '`),
		Env: []string{"PATH=/usr/bin:/bin", "SECRET=host-only"}})
	want := "env:unset:yes:unset\n" + sb.Root + "\n"
	if !strings.HasPrefix(out.stdout, want) {
		t.Fatalf("got %q, want prefix %q", out.stdout, want)
	}
	// ls sees stdio and its own directory fd (3) only.
	if fds := strings.TrimSpace(strings.TrimPrefix(out.stdout, want)); fds != "0 1 2 3" {
		t.Errorf("fd table of an exec: %q, want \"0 1 2 3\"", fds)
	}
	out = execIn(t, s, runner.ExecRequest{Args: []string{"pwd"}, Dir: "/tmp"})
	if out.stdout != "/tmp\n" {
		t.Errorf("Dir /tmp: pwd printed %q", out.stdout)
	}
}

func TestIntegrationSessionBoundaryPerExec(t *testing.T) {
	sb := newSandbox(t)
	s := startSession(t, sb)
	outside := filepath.Join(t.TempDir(), "escaped")
	for _, c := range []struct {
		name, script, path string
	}{
		{"read-only system", "echo x > /usr/cordon-session-probe", "/usr/cordon-session-probe"},
		{"protect", "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit", filepath.Join(sb.Root, ".git/hooks/pre-commit")},
		{"outside", "echo x > " + outside, outside},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := execIn(t, s, runner.ExecRequest{Args: sh(c.script)})
			if out.res.ExitCode == 0 {
				t.Fatalf("the write succeeded: %+v", out.res)
			}
			if c.name != "outside" && out.res.FailureType != runner.FailureSandboxDenied {
				t.Errorf("failure type %s, want sandbox_denied (%s)", out.res.FailureType, out.res.FailureDetail)
			}
			mustNotExist(t, c.path)
		})
	}
	// seccomp, no_new_privs and no capabilities hold in every exec.
	out := execIn(t, s, runner.ExecRequest{Args: sh(`unshare -U true 2>/dev/null && echo UNSHARED; grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status`)})
	if strings.Contains(out.stdout, "UNSHARED") || !strings.Contains(out.stdout, "NoNewPrivs:\t1") ||
		!strings.Contains(out.stdout, "Seccomp:\t2") || !strings.Contains(out.stdout, "CapEff:\t0000000000000000") {
		t.Fatalf("boundary of an exec:\n%s", out.stdout)
	}
	// A working directory the sandbox hides is refused before anything runs.
	out = execIn(t, s, runner.ExecRequest{Args: []string{"true"}, Dir: "/root"})
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.ExitCode == 0 {
		t.Errorf("Dir /root: %+v", out.res)
	}
}

// The control channel: PID 1 and each exec's shim are not dumpable, so a
// command can open none of their descriptors (the control socket, status
// pipes), and cordon's state directory, where the CLI's session socket
// lives, is not in the sandbox.
func TestIntegrationSessionControlUnreachable(t *testing.T) {
	s := startSession(t, newSandbox(t))
	out := execIn(t, s, runner.ExecRequest{Args: sh(`
		for fd in /proc/1/fd/* /proc/$PPID/fd/*; do
			readlink $fd 2>/dev/null && echo "READLINK $fd"
			true <$fd 2>/dev/null && echo "OPENED $fd"
		done
		cat /proc/1/environ >/dev/null 2>&1 && echo PID1-ENV
		ls ` + stateDir(t) + ` >/dev/null 2>&1 && echo STATE
		echo done`)})
	if out.stdout != "done\n" {
		t.Fatalf("the command reached the control channel:\n%s", out.stdout)
	}
	// A forged status cannot come from the command: it holds no status
	// pipe. What it can do, kill its own shim, ends the session instead
	// of leaving its processes untracked.
	start := time.Now()
	out = execIn(t, s, runner.ExecRequest{Args: sh(`sleep 100 & kill -9 $PPID; sleep 1`)})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the exec whose shim was killed took %s", d)
	}
	if out.res.FailureType != runner.FailureSessionGone || !errors.Is(out.err, runner.ErrSessionGone) {
		t.Fatalf("killing the shim: %+v err %v; want session_gone", out.res, out.err)
	}
	out = execIn(t, s, runner.ExecRequest{Args: []string{"true"}})
	if out.res.FailureType != runner.FailureSessionGone {
		t.Fatalf("exec after the session ended: %+v", out.res)
	}
}

func TestIntegrationSessionTimeoutKillsTree(t *testing.T) {
	s := startSession(t, newSandbox(t))
	start := time.Now()
	out := execIn(t, s, runner.ExecRequest{Timeout: 300 * time.Millisecond,
		Args: sh(`setsid sh -c 'sleep 101' & (sh -c 'sleep 102 &' &) ; sleep 103`)})
	if out.res.FailureType != runner.FailureTimeout || out.res.ExitCode != runner.ExitTimeout {
		t.Fatalf("got %+v, want timeout", out.res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	if n := countComm(sandboxProcs(t, s), "sleep"); n != 0 {
		t.Fatalf("%d sleep processes survived the timeout", n)
	}
	// The session goes on.
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.ExitCode != 0 {
		t.Fatalf("exec after a timeout: %+v", out.res)
	}
}

func TestIntegrationSessionStraysReaped(t *testing.T) {
	s := startSession(t, newSandbox(t))
	start := time.Now()
	out := execIn(t, s, runner.ExecRequest{Args: sh(`setsid sleep 201 & (sleep 202 &) ; nohup sleep 203 >/dev/null 2>&1 & echo started`)})
	if out.res.ExitCode != 0 || out.stdout != "started\n" {
		t.Fatalf("got %+v %q", out.res, out.stdout)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the exec waited for its strays (%s)", d)
	}
	if n := countComm(sandboxProcs(t, s), "sleep"); n != 0 {
		t.Fatalf("%d stray sleep processes survived their exec", n)
	}
	// --detach keeps them, for servers.
	out = execIn(t, s, runner.ExecRequest{Detach: true, Args: sh(`setsid sleep 204 >/dev/null 2>&1 & echo detached`)})
	if out.res.ExitCode != 0 || out.stdout != "detached\n" {
		t.Fatalf("detached exec: %+v %q", out.res, out.stdout)
	}
	// The shell may exit before its background child has exec'd sleep
	// (its comm is still sh or setsid), so look again until it has.
	n := 0
	for try := 0; try < 100; try++ {
		if n = countComm(sandboxProcs(t, s), "sleep"); n == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n != 1 {
		t.Fatalf("%d sleep processes after a detached exec, want 1", n)
	}
}

func TestIntegrationSessionConcurrentExecs(t *testing.T) {
	s := startSession(t, newSandbox(t))
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var so bytes.Buffer
			res, err := s.Exec(context.Background(), runner.ExecRequest{Args: sh(fmt.Sprintf("echo %d; exit %d", i, i%7)), Stdout: &so})
			if err != nil || res.ExitCode != i%7 || so.String() != strconv.Itoa(i)+"\n" {
				errs <- fmt.Errorf("exec %d: %+v %v %q", i, res, err, so.String())
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Close, and the death of the sandbox, end the session: later execs are
// refused at once with session_gone, and nothing is left on the host.
func TestIntegrationSessionGoneAndNoLeftovers(t *testing.T) {
	sb := newSandbox(t)
	s := startSession(t, sb)
	pid := initPID(t, s)
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not notice its sandbox died")
	}
	out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}})
	if out.res.FailureType != runner.FailureSessionGone || !errors.Is(out.err, runner.ErrSessionGone) || out.res.ExitCode != runner.ExitSetupError {
		t.Fatalf("exec after the sandbox died: %+v %v", out.res, out.err)
	}

	s2 := startSession(t, sb)
	pid2 := initPID(t, s2)
	id := s2.ID()
	if err := s2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	out = execIn(t, s2, runner.ExecRequest{Args: []string{"true"}})
	if out.res.FailureType != runner.FailureSessionGone || !strings.Contains(out.res.FailureDetail, "stopped") {
		t.Fatalf("exec after Close: %+v", out.res)
	}
	if err := unix.Kill(pid2, 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("the session's init %d is still there after Close (%v)", pid2, err)
	}
	for _, p := range []string{filepath.Join(stateDir(t), "lc", id), filepath.Join(stateDir(t), "runs", id)} {
		mustNotExist(t, p)
	}
	if isRoot() {
		for _, c := range []string{"/sys/fs/cgroup/memory/cordon/" + id, "/sys/fs/cgroup/pids/cordon/" + id, "/sys/fs/cgroup/cordon/" + id} {
			mustNotExist(t, c)
		}
	}
}

func BenchmarkSessionExecTrue(b *testing.B) {
	sb := &spec.Sandbox{Root: b.TempDir(), System: spec.System{Kind: spec.SystemHost}, RequireOSSandbox: true, Env: spec.Env{Pass: []string{"PATH"}}}
	r, err := runnerlinux.New(runner.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := r.(runner.SessionStarter).StartSession(context.Background(), runner.SessionRequest{Sandbox: sb})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Exec(context.Background(), runner.ExecRequest{Args: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
	}
}

// BenchmarkBareExecTrue is the floor BenchmarkSessionExecTrue compares with:
// a fork and exec of true from Go, with no sandbox.
func BenchmarkBareExecTrue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// On cgroup v1 (and, for now, v2) the memory limit is the session's: an
// exec that exceeds it is typed oom and said to share the session's
// limit, and the session goes on. Rootless, a session with a memory limit
// fails closed, as a run does.
func TestIntegrationSessionOOMIsSessionWide(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Memory = 48 << 20
	if !isRoot() {
		r, err := runnerlinux.New(runner.Options{StateDir: stateDir(t)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := r.(runner.SessionStarter).StartSession(context.Background(), runner.SessionRequest{Sandbox: sb})
		if err == nil {
			s.Close()
			t.Fatal("a rootless session with a memory limit started")
		}
		if !errors.Is(err, runner.ErrUnenforceable) {
			t.Fatalf("got %v, want ErrUnenforceable", err)
		}
		return
	}
	s := startSession(t, sb)
	out := execIn(t, s, runner.ExecRequest{Args: sh(`a=$(head -c 200000000 /dev/zero | tr '\0' x); echo ${#a}`)})
	if out.res.FailureType != runner.FailureOOM || !strings.Contains(out.res.FailureDetail, "shared by the whole session") {
		t.Fatalf("got %+v, want oom", out.res)
	}
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.ExitCode != 0 {
		t.Fatalf("the session did not survive the OOM kill: %+v", out.res)
	}
}

// Each exec has its own output cap (limits.output), reset for the next.
func TestIntegrationSessionOutputCapPerExec(t *testing.T) {
	sb := newSandbox(t)
	sb.Limits.Output = 10
	s := startSession(t, sb)
	for i := 0; i < 2; i++ {
		out := execIn(t, s, runner.ExecRequest{Args: sh("printf '%0100d' 0")})
		if out.res.ExitCode != 0 || out.stdout != strings.Repeat("0", 10)+fmt.Sprintf(runner.CutMarker, 10) ||
			!strings.Contains(out.stderr, "stdout cut at 10 bytes") || !out.res.OutputTruncated {
			t.Fatalf("exec %d: stdout %q stderr %q truncated %v", i, out.stdout, out.stderr, out.res.OutputTruncated)
		}
	}
}

// A stopped command, or a shim a command stopped, is resumed: nothing in
// the sandbox could, and the exec would hang until its timeout.
func TestIntegrationSessionStoppedIsResumed(t *testing.T) {
	s := startSession(t, newSandbox(t))
	for _, script := range []string{`kill -STOP $$; echo resumed`, `kill -STOP $PPID; sleep 0.2; echo resumed`} {
		start := time.Now()
		out := execIn(t, s, runner.ExecRequest{Args: sh(script), Timeout: 10 * time.Second})
		if out.res.ExitCode != 0 || out.stdout != "resumed\n" || time.Since(start) > 5*time.Second {
			t.Fatalf("%s: %+v %q after %s", script, out.res, out.stdout, time.Since(start))
		}
	}
}

// An exec that left nothing behind hands its shim to the next exec, which
// still starts clean: no process of the first, only its own stdio, its own
// directory. A detached exec's shim keeps what it started and serves no
// other exec.
func TestIntegrationSessionShimReused(t *testing.T) {
	s := startSession(t, newSandbox(t))
	first := execIn(t, s, runner.ExecRequest{Dir: "/tmp", Args: sh(`echo $PPID; sleep 301 & setsid sleep 302 & exec 7>/dev/null; echo x`)})
	second := execIn(t, s, runner.ExecRequest{Args: sh(`echo $PPID; pwd; ls /proc/self/fd | tr '\n' ' '`)})
	if first.res.ExitCode != 0 || second.res.ExitCode != 0 {
		t.Fatalf("execs failed: %+v %+v", first.res, second.res)
	}
	shim1, shim2 := strings.Fields(first.stdout)[0], strings.Fields(second.stdout)[0]
	if shim1 != shim2 {
		t.Fatalf("the second exec ran under shim %s, not %s: shims are not reused", shim2, shim1)
	}
	if lines := strings.Split(second.stdout, "\n"); len(lines) < 3 || lines[1] == "/tmp" || lines[2] != "0 1 2 3 " {
		t.Fatalf("the reused shim's exec did not start clean: %q", second.stdout)
	}
	if n := countComm(sandboxProcs(t, s), "sleep"); n != 0 {
		t.Fatalf("%d processes of an earlier exec of the same shim survived", n)
	}
	detached := execIn(t, s, runner.ExecRequest{Detach: true, Args: sh(`echo $PPID; setsid sleep 303 >/dev/null 2>&1 &`)})
	after := execIn(t, s, runner.ExecRequest{Args: sh(`echo $PPID`)})
	if detached.res.ExitCode != 0 || after.res.ExitCode != 0 || strings.TrimSpace(detached.stdout) == strings.TrimSpace(after.stdout) {
		t.Fatalf("a detached exec's shim served another exec: %q then %q (%+v %+v)", detached.stdout, after.stdout, detached.res, after.res)
	}
}

// A command can kill the idle shims (same uid): the execs after it are
// sent to live ones or to new ones, and the session goes on.
func TestIntegrationSessionIdleShimsKilled(t *testing.T) {
	s := startSession(t, newSandbox(t))
	// Some concurrent execs first, so that several shims are idle.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); execIn(t, s, runner.ExecRequest{Args: sh(`sleep 0.2`)}) }()
	}
	wg.Wait()
	kill := execIn(t, s, runner.ExecRequest{Args: sh(`n=0
for p in /proc/[0-9]*; do pid=${p#/proc/}
  case $pid in 1|$PPID|$$) ;; *) kill -9 $pid 2>/dev/null && n=$((n+1)) ;; esac
done
# Until they are gone.
for i in $(seq 100); do
  left=0
  for p in /proc/[0-9]*; do pid=${p#/proc/}
    case $pid in 1|$PPID|$$|self|thread-self) ;; *) [ "$(cut -d' ' -f3 $p/stat 2>/dev/null)" = Z ] || left=$((left+1)) ;; esac
  done
  [ $left -le 1 ] && break; sleep 0.02
done
echo $n`)})
	if kill.res.ExitCode != 0 || strings.TrimSpace(kill.stdout) == "0" {
		t.Fatalf("killing the idle shims: %+v %q", kill.res, kill.stdout)
	}
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.err != nil || out.res.ExitCode != 0 {
				errs <- fmt.Errorf("%+v %v", out.res, out.err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an exec after the idle shims were killed: %v", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
}

// blockingWriter blocks every Write until release is closed, as a client
// that stopped reading its stdout does.
type blockingWriter struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	return w.buf.Write(p)
}

// The timeout kills an exec's tree even while its output cannot be
// delivered: the supervisor's read of the output is then stuck in a write
// to the consumer, and the kill must not wait for it.
func TestIntegrationSessionTimeoutWhileOutputBlocked(t *testing.T) {
	s := startSession(t, newSandbox(t))
	marker := "/tmp/cordon-timeout-marker"
	w := &blockingWriter{release: make(chan struct{})}
	go func() {
		time.Sleep(3 * time.Second)
		close(w.release)
	}()
	var se bytes.Buffer
	res, err := s.Exec(context.Background(), runner.ExecRequest{Timeout: 300 * time.Millisecond, Stdout: w, Stderr: &se,
		Args: sh("echo first; sleep 2; touch " + marker + "; sleep 100")})
	if err != nil || res.FailureType != runner.FailureTimeout || res.ExitCode != runner.ExitTimeout {
		t.Fatalf("got %+v %v, want a timeout", res, err)
	}
	if w.buf.String() != "first\n" {
		t.Errorf("stdout %q, want the line written before the timeout", w.buf.String())
	}
	// The command was killed at the timeout, while the write was blocked:
	// it never reached the touch.
	if out := execIn(t, s, runner.ExecRequest{Args: sh("test -e " + marker + " && echo present || echo absent")}); out.stdout != "absent\n" {
		t.Fatalf("the marker is %q: the command outlived its timeout", out.stdout)
	}
}

// Output larger than a pipe's buffer, on both streams at once, arrives
// whole and in order on each.
func TestIntegrationSessionLargeOutput(t *testing.T) {
	s := startSession(t, newSandbox(t))
	for i := 0; i < 2; i++ {
		out := execIn(t, s, runner.ExecRequest{Args: sh(`seq 1 200000 & seq 1 100000 >&2; wait`)})
		want := func(n int) string {
			var b strings.Builder
			for i := 1; i <= n; i++ {
				b.WriteString(strconv.Itoa(i))
				b.WriteByte('\n')
			}
			return b.String()
		}
		if out.res.ExitCode != 0 || out.stdout != want(200000) || out.stderr != want(100000) {
			t.Fatalf("exec %d: exit %d, stdout %d bytes, stderr %d bytes", i, out.res.ExitCode, len(out.stdout), len(out.stderr))
		}
	}
}

// An exec ends when its command's tree is dead, even when a process
// outside that tree holds its output: here a server a detached exec left
// running receives the next exec's stdout over a Unix socket and keeps it.
// Everything that could still write to it is then outside the exec, so the
// output is read until it is quiet and the exec returns.
func TestIntegrationSessionOutputHeldOutsideTree(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	s := startSession(t, newSandbox(t))
	const sock = "/tmp/cordon-holder.sock"
	startHolder(t, s, sock, `open("/tmp/cordon-holder.pid", "w").write(str(os.getpid()))
time.sleep(30)
`)
	sender := fdSender(sock, 1)
	start := time.Now()
	out := execIn(t, s, runner.ExecRequest{Args: []string{"python3", "-c", sender}})
	took := time.Since(start)
	if out.res.ExitCode != 0 || out.stdout != "sent\n" {
		t.Fatalf("sender: %+v stdout %q", out.res, out.stdout)
	}
	// The holder still holds the pipe (it sleeps 30 s): the exec did not
	// wait for it.
	if chk := execIn(t, s, runner.ExecRequest{Args: sh("kill -0 $(cat /tmp/cordon-holder.pid) && echo held")}); chk.stdout != "held\n" {
		t.Fatalf("the holder is gone (%q) after %s: the exec waited for it", chk.stdout, took)
	}
	t.Logf("the exec returned after %s while the holder kept its stdout", took)
}

// slowWriter takes d over its first Write, as a consumer that reads its
// output late does.
type slowWriter struct {
	d    time.Duration
	once sync.Once
	buf  bytes.Buffer
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { time.Sleep(w.d) })
	return w.buf.Write(p)
}

// A consumer that takes its output late does not decide the outcome: the
// command ended well before its timeout while the supervisor was still
// delivering its output, so the exec is the command's exit, not a
// timeout, and the session goes on.
func TestIntegrationSessionSlowConsumerKeepsExit(t *testing.T) {
	s := startSession(t, newSandbox(t))
	w := &slowWriter{d: 3 * time.Second}
	var se bytes.Buffer
	res, err := s.Exec(context.Background(), runner.ExecRequest{Timeout: time.Second, Stdout: w, Stderr: &se,
		Args: sh("echo hi; sleep 0.05; exit 3")})
	if err != nil || res.ExitCode != 3 || res.FailureType == runner.FailureTimeout {
		t.Fatalf("got %+v %v, want exit 3: the command ended before its timeout", res, err)
	}
	if w.buf.String() != "hi\n" {
		t.Errorf("stdout %q", w.buf.String())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
	// A cancel after the command ended is no cancel either.
	ctx, cancel := context.WithCancel(context.Background())
	w = &slowWriter{d: 2 * time.Second}
	time.AfterFunc(500*time.Millisecond, cancel)
	res, err = s.Exec(ctx, runner.ExecRequest{Stdout: w, Stderr: &se, Args: sh("echo hi")})
	if err != nil || res.ExitCode != 0 || res.FailureType != runner.FailureNone {
		t.Fatalf("got %+v %v after a late cancel, want exit 0", res, err)
	}
}

// A command that kills its own shim while its output cannot be delivered
// does not escape its timeout: the shim's socket is then closed, which is
// no status (the sleep lets the supervisor take the output first, so it
// is in the write when the shim dies), so the kill's grace ends the session, and the command with
// it, while the consumer still blocks. The exec is typed session_gone,
// not a timeout with the session going on.
func TestIntegrationSessionShimKilledWhileOutputBlocked(t *testing.T) {
	s := startSession(t, newSandbox(t))
	const mark = "sleep 4242.5"
	w := &blockingWriter{release: make(chan struct{})}
	type result struct {
		res runner.Result
		err error
	}
	rc := make(chan result, 1)
	go func() {
		var se bytes.Buffer
		res, err := s.Exec(context.Background(), runner.ExecRequest{Timeout: 300 * time.Millisecond, Stdout: w, Stderr: &se,
			Args: sh("echo first; sleep 0.1; kill -9 $PPID; exec " + mark)})
		rc <- result{res, err}
	}()
	select {
	case <-s.Done():
	case r := <-rc:
		close(w.release)
		t.Fatalf("the exec returned while its consumer blocked: %+v %v", r.res, r.err)
	case <-time.After(30 * time.Second):
		close(w.release)
		t.Fatal("the session goes on: the command that killed its shim outlived its timeout")
	}
	// The sandbox's PID namespace is gone, and the command with it.
	for i := 0; ; i++ {
		if err := exec.Command("pgrep", "-f", mark).Run(); err != nil {
			break
		}
		if i == 50 {
			t.Fatalf("%q still runs after the session ended", mark)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(w.release)
	r := <-rc
	if r.res.FailureType != runner.FailureSessionGone || !errors.Is(r.err, runner.ErrSessionGone) {
		t.Fatalf("got %+v %v, want session_gone", r.res, r.err)
	}
	if !strings.Contains(r.res.FailureDetail, "timeout") {
		t.Errorf("the detail does not say the timeout came first: %q", r.res.FailureDetail)
	}
}

// A process outside an exec's tree that holds its stdout and keeps
// writing to it never lets the output be quiet; the exec still returns,
// drainCap after its command ended, with the command's own output whole.
func TestIntegrationSessionOutputHolderKeepsWriting(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	s := startSession(t, newSandbox(t))
	const sock = "/tmp/cordon-writer.sock"
	// It ignores SIGPIPE: the exec closes its read end once it returns,
	// and the holder must outlive that to show the exec did not wait.
	startHolder(t, s, sock, `signal.signal(signal.SIGPIPE, signal.SIG_IGN)
open("/tmp/cordon-writer.pid", "w").write(str(os.getpid()))
for _ in range(600):
    try:
        os.write(fds[0], b".")
    except BrokenPipeError:
        pass
    time.sleep(0.05)
`)
	sender := fdSender(sock, 1)
	start := time.Now()
	out := execIn(t, s, runner.ExecRequest{Args: []string{"python3", "-c", sender}})
	took := time.Since(start)
	// The holder's dots may come before the sender's line, or after.
	if out.res.ExitCode != 0 || strings.Count(out.stdout, "sent\n") != 1 || strings.Trim(strings.Replace(out.stdout, "sent\n", "", 1), ".") != "" {
		t.Fatalf("sender: %+v stdout %q", out.res, out.stdout)
	}
	// The holder writes for 30 s: it is still there, so the exec did not
	// wait for it.
	if chk := execIn(t, s, runner.ExecRequest{Args: sh("kill -0 $(cat /tmp/cordon-writer.pid) && echo held")}); chk.stdout != "held\n" {
		t.Fatalf("the holder is gone (%q) after %s: the exec waited for it", chk.stdout, took)
	}
	t.Logf("the exec returned after %s with %d bytes from the holder", took, len(out.stdout)-len("sent\n"))
}

// An exec ends when its command's tree is dead even when a process outside
// that tree holds its stdin and reads nothing: the supervisor's write of
// the rest of the input, blocked on the full pipe, is abandoned, and the
// pipe's write end is closed (the holder sees the hang-up), whether the
// input is a file (a client's stdin) or any other reader.
func TestIntegrationSessionStdinHeldOutsideTree(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	big := bytes.Repeat([]byte("x"), 4<<20)
	for _, tc := range []struct {
		name  string
		stdin func(t *testing.T) io.Reader
	}{
		{"file", func(t *testing.T) io.Reader {
			f, err := os.CreateTemp(t.TempDir(), "in")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(big); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Seek(0, 0); err != nil {
				t.Fatal(err)
			}
			return f
		}},
		{"reader", func(*testing.T) io.Reader { return bytes.NewReader(big) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSession(t, newSandbox(t))
			const sock, hup = "/tmp/cordon-inholder.sock", "/tmp/cordon-inholder.hup"
			// The holder never reads; it reports when every writer of the
			// pipe is gone.
			startHolder(t, s, sock, `p = select.poll()
p.register(fds[0], select.POLLIN)
for _ in range(600):
    if any(ev & select.POLLHUP for _, ev in p.poll(100)):
        open("`+hup+`", "w").write("hup")
        break
    time.sleep(0.1)
time.sleep(60)
`)
			sender := fdSender(sock, 0)
			rc := make(chan execOut, 1)
			go func() {
				var so, se bytes.Buffer
				res, err := s.Exec(context.Background(), runner.ExecRequest{Stdin: tc.stdin(t), Stdout: &so, Stderr: &se,
					Args: []string{"python3", "-c", sender}})
				rc <- execOut{res, err, so.String(), se.String()}
			}()
			var out execOut
			select {
			case out = <-rc:
			case <-time.After(30 * time.Second):
				t.Fatal("the exec has not returned 30 s after its command: it waits for the holder of its stdin")
			}
			if out.res.ExitCode != 0 || out.stdout != "sent\n" {
				t.Fatalf("sender: %+v stdout %q stderr %q", out.res, out.stdout, out.stderr)
			}
			chk := execIn(t, s, runner.ExecRequest{Args: sh("for i in $(seq 100); do test -e " + hup + " && exit 0; sleep 0.1; done; exit 1")})
			if chk.res.ExitCode != 0 {
				t.Fatal("the holder never saw the stdin pipe hang up: cordon still holds its write end")
			}
		})
	}
}

// Signals a command sends to PID 1 and the shims (same uid) do not stay
// queued: they are read and dropped at once, so a flood of real-time
// signals cannot fill the user's pending-signal limit on the host for the
// session's life. The session goes on.
func TestIntegrationSessionSignalFloodNotQueued(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	s := startSession(t, newSandbox(t))
	flood := `import os, signal
me = os.getpid()
pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
for i in range(3000):
    for p in pids:
        try:
            os.kill(p, signal.SIGRTMIN + i % 20)
        except ProcessLookupError:
            pass
print(len(pids))
`
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"python3", "-c", flood}}); out.res.ExitCode != 0 || strings.TrimSpace(out.stdout) == "0" {
		t.Fatalf("flood: %+v %q %s", out.res, out.stdout, out.stderr)
	}
	init := initPID(t, s)
	pending := func() []string {
		var left []string
		pids := []string{strconv.Itoa(init)}
		if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", init, init)); err == nil {
			pids = append(pids, strings.Fields(string(kids))...)
		}
		for _, p := range pids {
			status, err := os.ReadFile("/proc/" + p + "/status")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(status), "\n") {
				k, v, _ := strings.Cut(line, ":")
				if (k == "ShdPnd" || k == "SigPnd") && strings.Trim(strings.TrimSpace(v), "0") != "" {
					left = append(left, p+" "+line)
				}
			}
		}
		return left
	}
	var left []string
	for i := 0; i < 50; i++ {
		if left = pending(); len(left) == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Fatalf("signals stay queued in the session's PID 1 or shims: %v", left)
	}
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.ExitCode != 0 {
		t.Fatalf("the session did not go on: %+v", out.res)
	}
}

// A command cannot hand the commands after it worse process attributes
// through PID 1 and the shims (same uid, so prlimit and taskset reach
// them). What can be undone (a lowered soft limit, a narrowed CPU
// affinity) is undone before the next command; what cannot (a lowered
// hard limit) ends the session, typed session_gone with the reason,
// before any later command runs with it.
func TestIntegrationSessionInheritedAttributes(t *testing.T) {
	for _, tool := range []string{"prlimit", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	sb := newSandbox(t)
	s := startSession(t, sb)
	const probe = `ulimit -f; ulimit -n; grep Cpus_allowed_list /proc/self/status; grep -s -E '^(policy|prio|se.slice) ' /proc/self/sched; true`
	before := execIn(t, s, runner.ExecRequest{Args: sh(probe)})
	if before.res.ExitCode != 0 {
		t.Fatalf("probe: %+v", before.res)
	}
	// Every process of the session but the shell itself: PID 1 and the
	// shims, this exec's own included.
	each := func(cmd string) []string {
		return sh(`for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = $$ ] || ` + cmd + ` 2>/dev/null; done; true`)
	}
	// A soft RLIMIT_NOFILE of 3 leaves no room for the descriptors an
	// exec request carries: idle shims and PID 1 put it back before they
	// read one. sched_setattr sets a custom EEVDF slice (100 ms), which
	// a shim puts back too, and SCHED_RESET_ON_FORK, which only privilege
	// clears and which changes nothing for the commands: it is left.
	slice := `python3 -c 'import ctypes, struct, sys; libc = ctypes.CDLL(None, use_errno=True); ` +
		`a = ctypes.create_string_buffer(struct.pack("<IIQiIQQQII", 56, 0, 1, 0, 0, 100000000, 0, 0, 0, 0)); ` +
		`libc.syscall(314, int(sys.argv[1]), a, 0)' $p`
	if out := execIn(t, s, runner.ExecRequest{Args: each(`{ prlimit --pid $p --fsize=100:unlimited --nofile=3:; taskset -p 1 $p >/dev/null; ` + slice + `; }`)}); out.res.ExitCode != 0 {
		t.Fatalf("tamper: %+v", out.res)
	}
	round := 0
	check := func(what string) {
		t.Helper()
		// Four execs that wait for each other, so four shims run at
		// once and PID 1 forks new ones as well.
		round++
		var wg sync.WaitGroup
		outs := make([]execOut, 4)
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = execIn(t, s, runner.ExecRequest{Args: sh(barrier(fmt.Sprintf("/tmp/bar%d", round), len(outs)) + probe)})
			}()
		}
		wg.Wait()
		for i, after := range outs {
			if after.res.ExitCode != 0 || after.stdout != before.stdout {
				t.Fatalf("%s, exec %d: %+v inherits %q; before it, %q", what, i, after.res, after.stdout, before.stdout)
			}
		}
	}
	check("after the tampering")
	if out := execIn(t, s, runner.ExecRequest{Args: sh(`prlimit --pid 1 --nofile=3:`)}); out.res.ExitCode != 0 {
		t.Fatalf("tamper: %+v", out.res)
	}
	check("after PID 1's tampering")
	// A hard limit the sandbox cannot raise again.
	if out := execIn(t, s, runner.ExecRequest{Args: each(`prlimit --pid $p --fsize=100:100`)}); out.res.ExitCode != 0 {
		t.Fatalf("tamper: %+v", out.res)
	}
	marker := filepath.Join(sb.Root, "ran")
	out := execIn(t, s, runner.ExecRequest{Args: sh("head -c 5000 /dev/zero > " + marker)})
	if out.res.FailureType != runner.FailureSessionGone || !errors.Is(out.err, runner.ErrSessionGone) || !strings.Contains(out.res.FailureDetail, "prlimit") {
		t.Fatalf("the exec after a lowered hard limit: %+v %v; want session_gone naming the cause", out.res, out.err)
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Fatal("the command ran with the lowered limit")
	}
	if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.FailureType != runner.FailureSessionGone {
		t.Fatalf("an exec after that: %+v", out.res)
	}
}

// A file the host creates under a denied name after a session started is
// refused to every later exec with strict_deny (without it the deny
// watcher covers it milliseconds later: TestIntegrationDenyWindowSession),
// and the refusal says what was refused: a read.
func TestIntegrationSessionStrictDenyHostFile(t *testing.T) {
	sb := newSandbox(t)
	sb.Deny = []string{sb.Root + "/**/*.pem"}
	sb.StrictDeny = true
	if err := os.MkdirAll(filepath.Join(sb.Root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startSession(t, sb)
	key := filepath.Join(sb.Root, "sub", "id.pem")
	if err := os.WriteFile(key, []byte("HOSTKEY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := execIn(t, s, runner.ExecRequest{Args: sh("cat sub/id.pem; python3 -c 'print(open(\"sub/id.pem\").read())'")})
	if strings.Contains(out.stdout, "HOSTKEY") {
		t.Fatalf("the host's new key was read in the session: %q", out.stdout)
	}
	if out.res.FailureType != runner.FailureSandboxDenied || out.res.BlockedPath != key ||
		!strings.Contains(out.res.FailureDetail, "cannot read") || strings.Contains(out.res.FailureDetail, "cannot write") {
		t.Fatalf("got %+v; want sandbox_denied for reading %s", out.res, key)
	}
}

// When the session's processes reach its pids limit, an exec the sandbox
// cannot fork a process for fails alone, typed setup_error with the
// limit, and the session and the execs running in it go on; once the
// processes have ended, the next exec runs.
func TestIntegrationSessionForkFailureFailsOneExec(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	sb := newSandbox(t)
	sb.Limits.Pids = 24
	sb.RequireOSSandbox = false // rootless on cgroup v1 has no pids limit: skipped below
	s := startSession(t, sb)
	for _, u := range s.Unenforced() {
		if strings.Contains(u, "pids") {
			t.Skipf("the pids limit is not enforced here: %s", u)
		}
	}
	// A runs beside it all and forks nothing once started.
	started := filepath.Join(sb.Root, "a-started")
	a := make(chan execOut, 1)
	go func() {
		a <- execIn(t, s, runner.ExecRequest{Args: []string{"python3", "-c",
			`import time; open("` + started + `", "w").close(); time.sleep(3); print("A-done")`}})
	}()
	waitForFile(t, started)
	// B takes every pid the limit leaves and, for 4 s, each one freed.
	full := filepath.Join(sb.Root, "full")
	b := make(chan execOut, 1)
	go func() {
		hold := `import os, time
kids, said, end = [], False, time.time() + 4
while time.time() < end:
    try:
        pid = os.fork()
    except BlockingIOError:
        if not said:
            open("` + full + `", "w").close()
            said = True
        continue
    if pid == 0:
        time.sleep(max(0, end - time.time()))
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("B-done")
`
		b <- execIn(t, s, runner.ExecRequest{Args: []string{"python3", "-c", hold}})
	}()
	waitForFile(t, full)
	c := execIn(t, s, runner.ExecRequest{Args: []string{"true"}})
	if c.err != nil || (c.res.FailureType != runner.FailureSetupError && c.res.FailureType != runner.FailurePidsLimit) ||
		!strings.Contains(c.res.FailureDetail, "pids limit of 24") {
		t.Fatalf("the exec with no pid left: %+v %v; want setup_error or pids_limit naming the limit", c.res, c.err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
	if out := <-a; out.res.ExitCode != 0 || out.stdout != "A-done\n" {
		t.Fatalf("the exec running alongside: %+v %q", out.res, out.stdout)
	}
	if out := <-b; out.res.FailureType == runner.FailureSessionGone || !strings.HasSuffix(out.stdout, "B-done\n") {
		t.Fatalf("the exec that took every pid: %+v %q", out.res, out.stdout)
	}
	for i := 0; i < 2; i++ {
		if out := execIn(t, s, runner.ExecRequest{Args: []string{"true"}}); out.res.ExitCode != 0 {
			t.Fatalf("exec %d after the processes ended: %+v", i, out.res)
		}
	}
}

// PID 1 puts back its own attributes before it forks shims; a hard limit
// lowered on it, which it cannot raise again, ends the session with that
// reason before a shim inherits the limit.
func TestIntegrationSessionInitAttributesLowered(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit")
	}
	s := startSession(t, newSandbox(t))
	if out := execIn(t, s, runner.ExecRequest{Args: sh(`prlimit --pid 1 --nofile=3:3`)}); out.res.ExitCode != 0 {
		t.Fatalf("tamper: %+v", out.res)
	}
	// Four execs that wait for each other: PID 1 must fork shims.
	var wg sync.WaitGroup
	outs := make([]execOut, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = execIn(t, s, runner.ExecRequest{Args: sh(barrier("/tmp/bar", len(outs)) + "ulimit -Hn")})
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if out.res.ExitCode == 0 && out.stdout != "4096\n" {
			t.Fatalf("exec %d ran with the lowered limit: %q", i, out.stdout)
		}
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session goes on with PID 1's hard limit lowered")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "cannot be raised again") {
		t.Fatalf("the session ended with %v; want the lowered attributes as the reason", err)
	}
}

// barrier is a shell prefix that waits (up to 10 s) until n execs of a
// session ran it with the same dir: they then hold n shims at once.
func barrier(dir string, n int) string {
	return fmt.Sprintf(`mkdir -p %[1]s; touch %[1]s/$$; i=0; while [ $(ls %[1]s | wc -l) -lt %[2]d ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; `, dir, n)
}

// A command that lowers the limits of its own shim (prlimit --pid $PPID)
// does not keep what it started alive past its end: the shim puts a soft
// limit back before it kills the tree, so a background process is killed
// when the command exits and the exec returns at once. A hard limit it
// cannot put back ends the session, and the tree with it.
func TestIntegrationSessionShimLimitLoweredByCommand(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit")
	}
	s := startSession(t, newSandbox(t))
	gone := func(mark string) {
		t.Helper()
		for i := 0; ; i++ {
			if err := exec.Command("pgrep", "-f", mark).Run(); err != nil {
				return
			}
			if i == 50 {
				t.Fatalf("%q still runs", mark)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	out := execIn(t, s, runner.ExecRequest{Args: sh(`prlimit --pid $PPID --nofile=3: --as=10000000:; sleep 4243.5 >/dev/null 2>&1 </dev/null & exit 0`)})
	if out.res.ExitCode != 0 || out.res.FailureType != runner.FailureNone {
		t.Fatalf("soft limits: %+v", out.res)
	}
	gone("sleep 4243.5")
	if out := execIn(t, s, runner.ExecRequest{Args: sh("ulimit -n")}); out.stdout != "1024\n" {
		t.Fatalf("the next exec: %+v %q", out.res, out.stdout)
	}
	// A process of the tree that keeps lowering the shim's soft limit
	// while the shim scans for it: the exec still returns, and it is
	// killed (or, should the shim never settle, the session ends).
	tamper := `import ctypes, sys
class R(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
libc = ctypes.CDLL(None, use_errno=True)
low = R(3, 4096)
while True:
    libc.prlimit(int(sys.argv[1]), 7, ctypes.byref(low), None)
`
	for i := 0; i < 3; i++ {
		done := make(chan execOut, 1)
		go func() {
			done <- execIn(t, s, runner.ExecRequest{Args: sh(`( python3 -c '` + tamper + `' $PPID tamper-4245 >/dev/null 2>&1 </dev/null & wait ) >/dev/null 2>&1 </dev/null & sleep 0.5; exit 0`)})
		}()
		select {
		case out := <-done:
			if out.res.ExitCode != 0 && out.res.FailureType != runner.FailureSessionGone {
				t.Fatalf("with a tamperer: %+v", out.res)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the exec hangs while a process of its tree keeps lowering its shim's limit")
		}
		gone("tamper-4245")
		if s.Err() != nil {
			s = startSession(t, newSandbox(t))
		}
	}
	out = execIn(t, s, runner.ExecRequest{Args: sh(`prlimit --pid $PPID --nofile=3:3; sleep 4244.5 >/dev/null 2>&1 </dev/null & exit 0`)})
	if out.res.FailureType != runner.FailureSessionGone || !strings.Contains(out.res.FailureDetail, "cannot be raised again") {
		t.Fatalf("a hard limit: %+v; want session_gone naming the lowered limits", out.res)
	}
	gone("sleep 4244.5")
}

// fdSender is a Python program that sends its descriptor fd to the holder
// listening on the Unix socket sock (retrying until it listens) and prints
// "sent".
func fdSender(sock string, fd int) string {
	return fmt.Sprintf(`import socket, time
c = socket.socket(socket.AF_UNIX)
for _ in range(200):
    try:
        c.connect(%q)
        break
    except (FileNotFoundError, ConnectionRefusedError):
        time.sleep(0.05)
socket.send_fds(c, [b"x"], [%d])
print("sent", flush=True)
`, sock, fd)
}

// startHolder starts, in a detached exec of s, a Python server on the
// Unix socket sock that receives one descriptor (fds[0], from fdSender)
// and then runs body (os, select, signal, socket and time imported).
func startHolder(t *testing.T, s runner.Session, sock, body string) {
	t.Helper()
	holder := `import os, select, signal, socket, time
s = socket.socket(socket.AF_UNIX)
s.bind("` + sock + `")
s.listen(1)
c, _ = s.accept()
msg, fds, _, _ = socket.recv_fds(c, 1, 4)
` + body
	if out := execIn(t, s, runner.ExecRequest{Detach: true, Args: sh("python3 -c '" + holder + "' >/dev/null 2>&1 &")}); out.res.ExitCode != 0 {
		t.Fatalf("starting the holder: %+v", out.res)
	}
}
