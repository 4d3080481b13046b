package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

// init serves as the fake session server of checkPidnsImpostor when this
// test binary is started as one.
func init() {
	if sock := os.Getenv("CORDON_TEST_FAKE_SERVER"); sock != "" {
		fakeServerMain(sock)
	}
}

// goClientEnv makes `cordon exec`'s C client (execclient_linux.c) leave
// the exec to the Go client: a request above its 256 KiB buffer. The
// padding changes nothing else: env.pass picks what the command sees.
func goClientEnv() []string {
	var env []string
	for i := 0; i < 3; i++ {
		env = append(env, fmt.Sprintf("CORDON_TEST_PAD_%d=%s", i, strings.Repeat("x", 100<<10)))
	}
	return env
}

// execCmd is u.cmd with extra environment variables, passed through
// setpriv's env for the rootless user.
func (u sessionUser) execCmd(stdin string, extra []string, args ...string) *exec.Cmd {
	argv := append(append(append(append([]string{}, u.prefix...), extra...), u.bin), args...)
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = u.ws
	c.Env = append(os.Environ(), u.env...)
	if u.prefix == nil {
		c = exec.Command(u.bin, args...)
		c.Dir = u.ws
		c.Env = append(append(os.Environ(), u.env...), extra...)
	}
	if stdin != "" {
		c.Stdin = strings.NewReader(stdin)
	}
	return c
}

func runExecCmd(t *testing.T, c *exec.Cmd) cliResult {
	t.Helper()
	var so, se bytes.Buffer
	c.Stdout, c.Stderr = &so, &se
	err := c.Run()
	r := cliResult{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", c.Args, err)
	}
	return r
}

// execBoth runs `cordon exec ARGS` through the C client and through the Go
// client.
func execBoth(t *testing.T, u sessionUser, stdin string, args ...string) (fast, full cliResult) {
	t.Helper()
	fast = runExecCmd(t, u.execCmd(stdin, nil, args...))
	full = runExecCmd(t, u.execCmd(stdin, goClientEnv(), args...))
	return fast, full
}

// clientPath starts `cordon exec NAME FLAGS -- sh -c 'echo ready; cat'`
// and tells which client serves it: the C client at the entry point never
// allocates, so its process has no [heap]; the Go client's (the C
// library's start, then Go's) has one.
func clientPath(t *testing.T, u sessionUser, name string, extra []string, flags ...string) string {
	t.Helper()
	args := append(append([]string{"exec", name}, flags...), "--", "sh", "-c", "echo ready; cat")
	c := u.execCmd("", extra, args...)
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = c.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		in.Close()
		_ = c.Wait()
		t.Fatalf("%q: no ready line: %q %v; stderr %q", c.Args, line, err, stderr.String())
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", c.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(maps, []byte("[heap]")) {
		return "go"
	}
	return "c"
}

// The C client and the Go client give the same stdout, stderr and exit
// code for every outcome, root and rootless: output, stdin, an exit code,
// a signal (128+n), a timeout, a command not found, --cwd, a missing
// session, a stale socket and a stopped session. The C client serves every
// flag of a non-terminal exec; what it leaves the Go client serves.
func TestExecCClientMatchesGoClient(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			name := uniqueName("fast")
			startNamed(t, u, name)
			// --memory too (TestExecWireCEncodesGoDecodes), which a cgroup v1
			// host refuses before the command runs.
			for _, flags := range [][]string{nil, {"--sandbox", "--json"},
				{"--timeout=1h", "--cwd", "/tmp", "--report", filepath.Join(u.ws, "path.json")}} {
				if p := clientPath(t, u, name, nil, flags...); p != "c" {
					t.Fatalf("an exec with flags %q was served by the %s client, not the C one", flags, p)
				}
			}
			if p := clientPath(t, u, name, goClientEnv()); p != "go" {
				t.Fatalf("a padded exec was served by the %s client, not the Go one", p)
			}
			stale := uniqueName("stale")
			makeStaleSession(t, u, stale)
			cases := []struct {
				name, stdin string
				args        []string
				code        int
				stdout      string
				stderrHas   string
			}{
				{"output", "", []string{"exec", name, "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n"},
				{"stdin", "some input\n", []string{"exec", name, "--", "cat"}, 0, "some input\n", ""},
				{"signal", "", []string{"exec", name, "--", "sh", "-c", "kill -9 $$"}, 137, "", ""},
				{"no dashes", "", []string{"exec", name, "echo", "a b"}, 0, "a b\n", ""},
				{"cwd", "", []string{"exec", name, "--cwd=/tmp", "--", "pwd"}, 0, "/tmp\n", ""},
				{"timeout", "", []string{"exec", name, "--timeout", "200ms", "--", "sleep", "10"}, 124, "", "timeout"},
				{"not found", "", []string{"exec", name, "--", "cordon-no-such-command"}, 127, "", "cordon-no-such-command"},
				{"missing session", "", []string{"exec", "cordon-no-such-session", "--", "true"}, 125, "",
					"cordon: session_gone: session cordon-no-such-session is not running (no such session)"},
				{"stale socket", "", []string{"exec", stale, "--", "true"}, 125, "",
					"cordon: session_gone: session " + stale + " is not running (its supervisor is gone)"},
			}
			for _, tc := range cases {
				fast, full := execBoth(t, u, tc.stdin, tc.args...)
				if fast.code != tc.code || fast.stdout != tc.stdout || !strings.Contains(fast.stderr, tc.stderrHas) {
					t.Errorf("%s: C client: exit %d stdout %q stderr %q; want exit %d stdout %q stderr with %q",
						tc.name, fast.code, fast.stdout, fast.stderr, tc.code, tc.stdout, tc.stderrHas)
				}
				if tc.name == "timeout" { // its message says how long the command ran
					fast.stderr, full.stderr = "", ""
				}
				if fast != full {
					t.Errorf("%s: the C and the Go client differ:\nC  %+v\nGo %+v", tc.name, fast, full)
				}
			}
			checkFastReports(t, u, name)
			if r := u.run(t, "", "session", "stop", name); r.code != 0 {
				t.Fatalf("stop: %d %s", r.code, r.stderr)
			}
			fast, full := execBoth(t, u, "", "exec", name, "--", "true")
			if fast.code != 125 || !strings.Contains(fast.stderr, "cordon: session_gone: session "+name+" is not running") || fast != full {
				t.Fatalf("exec after stop:\nC  %+v\nGo %+v", fast, full)
			}
		})
	}
}

// checkFastReports: --report and --json give the same report through the C
// and the Go client (the fields that do not vary between two runs), a report is
// written for a session that is gone, and a command's own "--report X"
// (after the command, with no "--") is not cordon's.
func checkFastReports(t *testing.T, u sessionUser, name string) {
	t.Helper()
	reports := map[string]map[string]any{}
	for _, client := range []struct {
		name string
		env  []string
	}{{"c", nil}, {"go", goClientEnv()}} {
		for _, tc := range []struct {
			session string
			code    int
			typ     string
		}{{name, 3, "process_error"}, {"cordon-no-such-session", 125, "session_gone"}} {
			rep := filepath.Join(u.ws, client.name+"-"+tc.session+".json")
			r := runExecCmd(t, u.execCmd("", client.env, "exec", tc.session, "--json", "--report", rep, "--", "sh", "-c", "exit 3"))
			got := readReportMap(t, rep)
			if r.code != tc.code || got["exit_code"] != float64(tc.code) || got["failure_type"] != tc.typ ||
				!strings.Contains(r.stderr, `"failure_type": "`+tc.typ+`"`) {
				t.Errorf("%s client, session %s: exit %d, report %v, stderr %s", client.name, tc.session, r.code, got, r.stderr)
			}
			reports[client.name+tc.session] = got
		}
		r := runExecCmd(t, u.execCmd("", client.env, "exec", name, "echo", "--report", "cmd-report.json"))
		if r.code != 0 || r.stdout != "--report cmd-report.json\n" || fileExists(filepath.Join(u.ws, "cmd-report.json")) {
			t.Errorf("%s client: a command's own --report: exit %d stdout %q, file made: %v", client.name, r.code, r.stdout,
				fileExists(filepath.Join(u.ws, "cmd-report.json")))
		}
	}
	for _, session := range []string{name, "cordon-no-such-session"} {
		fast, full := reports["c"+session], reports["go"+session]
		for _, k := range []string{"exit_code", "failure_type", "failure_detail", "backend"} {
			if fmt.Sprint(fast[k]) != fmt.Sprint(full[k]) {
				t.Errorf("session %s: the reports differ in %s: C %v, Go %v", session, k, fast[k], full[k])
			}
		}
	}
}

// userSessionDir creates (as the user's) the sessions directory of u and
// the directory of session name in it.
func userSessionDir(t *testing.T, u sessionUser, name string) string {
	t.Helper()
	dir := filepath.Join(u.state, "sessions", name)
	for _, d := range []string{u.state, filepath.Dir(dir), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		if u.prefix != nil {
			if err := os.Chown(d, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Its lock held, as a supervisor holds it: a concurrent `cordon
	// session list` would otherwise remove the directory as a dead
	// session's.
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, u, lock.Name())
	t.Cleanup(func() { _ = os.RemoveAll(dir); lock.Close() })
	return dir
}

// makeStaleSession leaves what a killed supervisor leaves: the session's
// directory and its socket, with no one listening.
func makeStaleSession(t *testing.T, u sessionUser, name string) {
	t.Helper()
	dir := userSessionDir(t, u, name)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	chownToUser(t, u, filepath.Join(dir, "sock"))
}

// chownToUser gives path to the rootless user (a socket made by this root
// process is not writable, so not connectable, by it otherwise).
func chownToUser(t *testing.T, u sessionUser, path string) {
	t.Helper()
	if u.prefix != nil {
		if err := os.Chown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeServer serves a session's socket with a canned reply and counts what
// its clients sent: bytes and descriptors.
type fakeServer struct {
	l     *net.UnixListener
	reply []byte
	mu    sync.Mutex
	bytes int
	fds   int
	conns int
	wg    sync.WaitGroup
}

func newFakeServer(t *testing.T, sock string, reply []byte) *fakeServer {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{l: l, reply: reply}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			s.serve(c)
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) serve(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var got []byte
	fds := 0
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*4))
	// The whole request: its 32-byte header, then the payload it announces.
	for len(got) < 32 || len(got) < 32+int(binary.NativeEndian.Uint32(got[20:24])) {
		k, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if oobn > 0 {
			if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
				for i := range msgs {
					rights, _ := unix.ParseUnixRights(&msgs[i])
					for _, fd := range rights {
						unix.Close(fd)
					}
					fds += len(rights)
				}
			}
		}
		got = append(got, buf[:k]...)
		if err != nil || k == 0 {
			break
		}
	}
	s.mu.Lock()
	s.bytes += len(got)
	s.fds += fds
	s.conns++
	s.mu.Unlock()
	if len(got) > 0 {
		_, _ = c.Write(s.reply)
	}
}

func (s *fakeServer) close() {
	s.l.Close()
	s.wg.Wait()
}

func (s *fakeServer) got() (bytes, fds, conns int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.fds, s.conns
}

func fakeReply(magic, version, code, msgLen, reportLen uint32, body string) []byte {
	h := make([]byte, 24)
	le := binary.NativeEndian
	le.PutUint32(h[0:], magic)
	le.PutUint32(h[4:], version)
	le.PutUint32(h[8:], code)
	le.PutUint32(h[12:], msgLen)
	le.PutUint32(h[16:], reportLen)
	return append(h, body...)
}

func writeInfo(t *testing.T, dir string, pid int) {
	t.Helper()
	data := fmt.Sprintf(`{"name":%q,"pid":%d,"id":"fake"}`, filepath.Base(dir), pid)
	if err := os.WriteFile(filepath.Join(dir, "info.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The client treats the server's reply as untrusted: a bad magic, an exit
// code above 255, lengths beyond the cap or a reply cut short are refused
// with session_gone (exit 125), by the C and the Go client alike. The fake server runs as root, so as root only.
func TestExecClientRefusesMalformedReplies(t *testing.T) {
	testenvRoot(t)
	u := sessionUser{name: "root", bin: cordonBin(t), ws: t.TempDir(), state: "/run/cordon"}
	const magic, version = sessiond.WireRespMagic, 1
	cases := []struct {
		name      string
		reply     []byte
		code      int
		stderrHas string
	}{
		{"well formed", fakeReply(magic, version, 42, 6, 0, "hello\n"), 42, "hello\n"},
		{"bad magic", fakeReply(0x41414141, version, 0, 0, 0, ""), 125, "(its reply was malformed)"},
		{"bad version", fakeReply(magic, 7, 0, 0, 0, ""), 125, "(its reply was malformed)"},
		{"exit code above 255", fakeReply(magic, version, 300, 0, 0, ""), 125, "(its reply was malformed)"},
		{"negative exit code", fakeReply(magic, version, 0xffffffff, 0, 0, ""), 125, "(its reply was malformed)"},
		{"huge lengths", fakeReply(magic, version, 0, 0xffffffff, 0xffffffff, ""), 125, "(its reply was malformed)"},
		{"lengths that wrap", fakeReply(magic, version, 0, 0x10, 0xfffffff8, ""), 125, "(its reply was malformed)"},
		{"cut short", fakeReply(magic, version, 0, 100, 0, "only this")[:20], 125, "(it ended while the command ran)"},
		{"body cut short", fakeReply(magic, version, 0, 100, 0, "only this"), 125, "(it ended while the command ran)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName("garbage")
			dir := userSessionDir(t, u, name)
			srv := newFakeServer(t, filepath.Join(dir, "sock"), tc.reply)
			writeInfo(t, dir, os.Getpid())
			fast, full := execBoth(t, u, "", "exec", name, "--", "true")
			if fast.code != tc.code || !strings.Contains(fast.stderr, tc.stderrHas) || fast != full {
				t.Fatalf("want exit %d and %q:\nC  %+v\nGo %+v", tc.code, tc.stderrHas, fast, full)
			}
			if _, fds, conns := srv.got(); conns != 2 || fds != 6 {
				t.Fatalf("the server saw %d connections and %d descriptors; want 2 and 6 (it passed the check)", conns, fds)
			}
		})
	}
}

func testenvRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the fake server must run as root here")
	}
	_ = sessionUsers(t) // the sandbox checks of the other session tests
}

// The client sends nothing (no descriptor, no byte) to a server that is
// not the session's supervisor, and says so: a server of another user
// (rootless: a root process serves the user's socket), a pid other than
// the recorded supervisor's, no recorded pid, and a process in a PID
// namespace below this one, as a sandboxed process is.
func TestExecClientVerifiesTheServer(t *testing.T) {
	for _, u := range sessionUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			reply := fakeReply(sessiond.WireRespMagic, 1, 0, 0, 0, "")
			type setup func(t *testing.T, dir string) *fakeServer
			inProcess := func(pid int) setup {
				return func(t *testing.T, dir string) *fakeServer {
					srv := newFakeServer(t, filepath.Join(dir, "sock"), reply)
					chownToUser(t, u, filepath.Join(dir, "sock"))
					if pid != 0 {
						writeInfo(t, dir, pid)
					}
					return srv
				}
			}
			cases := []struct {
				name  string
				setup setup
				why   string
			}{
				{"another pid", inProcess(1), "its socket is not served by its supervisor"},
				{"no info", inProcess(0), "its info.json has no supervisor pid"},
			}
			if u.prefix != nil {
				// The server is this (root) process; the client is uid 4242.
				cases = []struct {
					name  string
					setup setup
					why   string
				}{{"another user", inProcess(os.Getpid()), "its socket is served by another user"}}
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					name := uniqueName("impostor")
					dir := userSessionDir(t, u, name)
					srv := tc.setup(t, dir)
					fast, full := execBoth(t, u, "", "exec", name, "--", "true")
					want := "cordon: session_gone: session " + name + " is not running (" + tc.why + ")"
					if fast.code != 125 || !strings.Contains(fast.stderr, want) || fast != full {
						t.Fatalf("want exit 125 and %q:\nC  %+v\nGo %+v", want, fast, full)
					}
					srv.close()
					if n, fds, conns := srv.got(); n != 0 || fds != 0 || conns == 0 {
						t.Fatalf("the impostor got %d bytes and %d descriptors over %d connections; want none over some", n, fds, conns)
					}
				})
			}
			if u.prefix == nil {
				t.Run("inside a PID namespace", func(t *testing.T) { checkPidnsImpostor(t, u) })
			}
		})
	}
}

// checkPidnsImpostor serves the session's socket from a process in a new
// PID namespace (this test binary again, under unshare), with its host pid
// recorded as the supervisor's: the client refuses it and sends nothing.
func checkPidnsImpostor(t *testing.T, u sessionUser) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) is missing")
	}
	name := uniqueName("pidns")
	dir := userSessionDir(t, u, name)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Unprivileged, a PID namespace needs a user namespace of its own:
	// its root maps to this user, so the impostor has the session's uid.
	ns := []string{"--pid", "--fork"}
	if os.Geteuid() != 0 {
		ns = append([]string{"--user", "--map-root-user"}, ns...)
	}
	if out, err := exec.Command("unshare", append(ns, "true")...).CombinedOutput(); err != nil {
		why := fmt.Sprintf("cannot make a PID namespace here as uid %d (unshare %s: %v: %s)", os.Geteuid(), strings.Join(ns, " "), err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(why + ", and CI=true forbids skipping")
		}
		t.Skip(why)
	}
	c := exec.Command("unshare", append(ns, self)...)
	c.Env = append(os.Environ(), "CORDON_TEST_FAKE_SERVER="+filepath.Join(dir, "sock"))
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); _ = c.Wait() }()
	br := bufio.NewReader(out)
	if line, err := br.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the fake server did not start: %q %v", line, err)
	}
	kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.Process.Pid, c.Process.Pid))
	pid, perr := strconv.Atoi(strings.TrimSpace(string(kids)))
	if err != nil || perr != nil {
		t.Fatalf("the fake server's pid: %q %v %v", kids, err, perr)
	}
	writeInfo(t, dir, pid)
	fast, full := execBoth(t, u, "", "exec", name, "--", "true")
	want := "cordon: session_gone: session " + name + " is not running (its socket is served from inside a sandbox, not by its supervisor)"
	if fast.code != 125 || !strings.Contains(fast.stderr, want) || fast != full {
		t.Fatalf("want exit 125 and %q:\nC  %+v\nGo %+v", want, fast, full)
	}
	in.Close()
	stats, _ := io.ReadAll(br)
	if strings.TrimSpace(string(stats)) != "bytes=0 fds=0" {
		t.Fatalf("the impostor in a PID namespace got %q; want nothing", stats)
	}
}

// fakeServerMain is this test binary run as a fake session server (see
// checkPidnsImpostor): it serves sock until its stdin closes, then prints
// what its clients sent.
func fakeServerMain(sock string) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	s := &fakeServer{l: l, reply: fakeReply(sessiond.WireRespMagic, 1, 0, 0, 0, "")}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			s.serve(c)
		}
	}()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	s.close()
	n, fds, _ := s.got()
	fmt.Printf("bytes=%d fds=%d\n", n, fds)
	os.Exit(0)
}
