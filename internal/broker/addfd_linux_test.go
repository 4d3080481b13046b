package broker

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allowAll is a policy that refuses nothing.
type allowAll struct{}

func (allowAll) Refuse(string) string { return "" }

// notifyCreatesFilter is a seccomp program that notifies openat with O_CREAT
// and allows everything else (the runner's filter, reduced to one rule).
func notifyCreatesFilter() []unix.SockFilter {
	const (
		ldW    = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		notify = unix.SECCOMP_RET_USER_NOTIF
	)
	return []unix.SockFilter{
		{Code: ldW, K: 4}, // arch
		{Code: jeq, Jt: 0, Jf: 5, K: nativeArch},
		{Code: ldW, K: 0}, // nr
		{Code: jeq, Jt: 0, Jf: 3, K: unix.SYS_OPENAT},
		{Code: ldW, K: 32}, // args[2], low half: the flags
		{Code: jset, Jt: 0, Jf: 1, K: unix.O_CREAT},
		{Code: ret, K: notify},
		{Code: ret, K: allow},
	}
}

// TestBrokerChildCreates is not a test: it is the process
// TestBrokerOpenSurvivesSignals starts. It installs the filter on its
// thread, sends the listener over descriptor 3, creates files through the
// broker and checks that every descriptor it got back is the file it
// created.
func TestBrokerChildCreates(t *testing.T) {
	dir := os.Getenv("CORDON_BROKER_CHILD_DIR")
	if dir == "" {
		t.Skip("the child of TestBrokerOpenSurvivesSignals")
	}
	runtime.LockOSThread()
	n, _ := strconv.Atoi(os.Getenv("CORDON_BROKER_CHILD_N"))
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CORDON_BROKER_CHILD_PLAIN") != "" {
		// No filter (BenchmarkPlainCreate): any descriptor stands in for
		// the listener.
		if err := unix.Sendmsg(3, []byte{'L'}, unix.UnixRights(3), nil, 0); err != nil {
			t.Fatal(err)
		}
		createFiles(t, dir, n)
		return
	}
	prog := notifyCreatesFilter()
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	l, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fp)))
	if e != 0 {
		t.Fatalf("seccomp: %v", e)
	}
	if err := unix.Sendmsg(3, []byte{'L'}, unix.UnixRights(int(l)), nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(int(l))
	createFiles(t, dir, n)
}

// createFiles creates n files in dir, each checked to be the descriptor
// open returned, with one byte written through it.
func createFiles(t *testing.T, dir string, n int) {
	bad := 0
	for i := range n {
		p := filepath.Join(dir, "f"+strconv.Itoa(i))
		fd, err := unix.Openat(unix.AT_FDCWD, p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Errorf("open %s: %v", p, err)
			bad++
			continue
		}
		var got, want unix.Stat_t
		if fd <= 2 || unix.Fstat(fd, &got) != nil || unix.Stat(p, &want) != nil || got.Ino != want.Ino {
			t.Errorf("open %s returned descriptor %d, which is not the file it created", p, fd)
			bad++
			if fd > 2 {
				unix.Close(fd)
			}
			continue
		}
		if _, err := unix.Write(fd, []byte{'x'}); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
		unix.Close(fd)
		if bad > 5 {
			t.FailNow()
		}
	}
}

// TestBrokerOpenSurvivesSignals: a signal to a worker while it installs an
// opened file in the caller (SECCOMP_IOCTL_NOTIF_ADDFD) must not make the
// caller's open return 0 with no descriptor. The Go runtime preempts
// threads with SIGURG at any moment; here they are sent on purpose, while
// a child creates files through the broker.
func TestBrokerOpenSurvivesSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	const n = 1000
	dir := t.TempDir()
	cmd, out, listener := startChild(t, dir, n)
	b := Start(listener, allowAll{}, Creds{})
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			b.mu.Lock()
			tids := append([]int(nil), b.tids...)
			b.mu.Unlock()
			for _, tid := range tids {
				_ = unix.Tgkill(unix.Getpid(), tid, unix.SIGURG)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	werr := cmd.Wait()
	close(done)
	b.Stop()
	if werr != nil {
		t.Fatalf("the child's creates went wrong: %v\n%s", werr, out.String())
	}
	for i := range n {
		data, err := os.ReadFile(filepath.Join(dir, "f"+strconv.Itoa(i)))
		if err != nil || string(data) != "x" {
			t.Fatalf("file %d: %q, %v (want the byte the child wrote through its descriptor)", i, data, err)
		}
	}
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBrokerDeadCallerChangesNothing: a caller that dies after its call was
// received (its pid could then be another process's) has nothing performed
// for it, though the sandbox's root is already known to the broker.
func TestBrokerDeadCallerChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd, _, listener := startChild(t, dir, 2)
	var mu sync.Mutex
	received := 0
	testHookRead = func(n *notif) {
		mu.Lock()
		received++
		second := received == 2
		mu.Unlock()
		if !second {
			return
		}
		// The second create (f1): its path was read, and the caller
		// dies before it is performed.
		_ = cmd.Process.Kill()
		for valid(listener, n.ID) {
			time.Sleep(time.Millisecond)
		}
	}
	defer func() { testHookRead = nil }()
	b := Start(listener, allowAll{}, Creds{})
	_ = cmd.Wait()
	b.Stop()
	if _, err := os.Stat(filepath.Join(dir, "f0")); err != nil {
		t.Fatalf("the first create, of a live caller, was not performed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "f1")); !os.IsNotExist(err) {
		t.Fatalf("f1 was created for a caller that had died: %v", err)
	}
	if received != 2 {
		t.Fatalf("%d paths read, want 2", received)
	}
}

// startChild starts TestBrokerChildCreates creating n files in dir and
// returns it, its output and its listener.
func startChild(t testing.TB, dir string, n int, env ...string) (*exec.Cmd, *lockedBuffer, int) {
	t.Helper()
	return startChildRun(t, "TestBrokerChildCreates", append([]string{"CORDON_BROKER_CHILD_DIR=" + dir, "CORDON_BROKER_CHILD_N=" + strconv.Itoa(n)}, env...)...)
}

// startChildRun starts this test binary running only the test named run,
// with env added, and returns it, its output and the listener it sends.
func startChildRun(t testing.TB, run string, env ...string) (*exec.Cmd, *lockedBuffer, int) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "mine"), os.NewFile(uintptr(pair[1]), "theirs")
	defer mine.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = []*os.File{theirs}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	fail := func(why string, err error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("no listener from the child (%s): %v\n%s", why, err, out.String())
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(int(mine.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		fail("recvmsg", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		fail("control message", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		fail("rights", err)
	}
	return cmd, out, fds[0]
}

// lockedBuffer collects a child's output (its copying goroutines write at
// once).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
