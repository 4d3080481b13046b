package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBrokerDirPathOddNames: call.dirPath (fchdir and getcwd) gives what
// fdPath (the readlink) gives for names that getcwd and d_path might
// render differently: a newline, "(unreachable)" as a real name, a
// " (deleted)" inside a path, a bind mount's second name, a directory of
// a lazily unmounted mount, and paths near and past PATH_MAX.
func TestBrokerDirPathOddNames(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := func(total int) string { // a path of about total bytes under base
		var b strings.Builder
		b.WriteString(base)
		for b.Len() < total-250 {
			b.WriteString("/" + strings.Repeat("d", 200))
		}
		b.WriteString("/" + strings.Repeat("e", total-b.Len()-1))
		return b.String()
	}
	rows := []struct {
		name, path string
		root       bool // needs mounts
		setup      func(p string) error
	}{
		{"newline", base + "/a\nb/c", false, nil},
		{"unreachable-name", base + "/(unreachable)/x", false, nil},
		{"unreachable-prefix-like", base + "/(unreachable)x", false, nil},
		{"deleted-inside", base + "/y (deleted)/z", false, nil},
		{"near-path-max", long(4090), false, nil},
		{"past-path-max", long(4200), false, nil},
		{"bind-second-name", base + "/bound/sub", true, func(p string) error {
			if err := os.MkdirAll(base+"/src/sub", 0o755); err != nil {
				return err
			}
			if err := os.Mkdir(base+"/bound", 0o755); err != nil {
				return err
			}
			return unix.Mount(base+"/src", base+"/bound", "", unix.MS_BIND, "")
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.root && os.Geteuid() != 0 {
				t.Skip("mounts need root")
			}
			if r.setup != nil {
				if err := r.setup(r.path); err != nil {
					t.Fatal(err)
				}
				defer unix.Unmount(base+"/bound", unix.MNT_DETACH) //nolint:errcheck // test cleanup
			} else if err := mkdirLong(r.path); err != nil {
				t.Fatal(err)
			}
			fd, err := openLong(r.path)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			want, wantErr := fdPath(fd)
			var got string
			var gotErr error
			onOwnFS(t, func() { got, gotErr = (&call{ownFS: true}).dirPath(fd) })
			if got != want || (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("dirPath %q %v, readlink %q %v", got, gotErr, want, wantErr)
			}
			t.Logf("len %d err %v", len(got), gotErr)
		})
	}
	t.Run("lazily-unmounted", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("mounts need root")
		}
		m := base + "/mnt"
		if err := os.Mkdir(m, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("none", m, "tmpfs", 0, ""); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(m+"/q/r", 0o755); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(m+"/q/r", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		want, wantErr := fdPath(fd)
		var got string
		var gotErr error
		onOwnFS(t, func() { got, gotErr = (&call{ownFS: true}).dirPath(fd) })
		t.Logf("detached: dirPath %q %v, readlink %q %v", got, gotErr, want, wantErr)
		if got != want || (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("dirPath %q %v, readlink %q %v", got, gotErr, want, wantErr)
		}
	})
}

// mkdirLong makes p and its parents, walking by descriptor (p may be
// longer than PATH_MAX).
func mkdirLong(p string) error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return fmt.Errorf("mkdir %q: %w", c, err)
		}
		nfd, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = nfd
	}
	unix.Close(fd)
	return nil
}

func openLong(p string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		nfd, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// threadCwds returns the working directory of every thread of this
// process but those in skip.
func threadCwds(t *testing.T, skip map[int]bool) map[int]string {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if skip[tid] {
			continue
		}
		if cwd, err := os.Readlink("/proc/self/task/" + e.Name() + "/cwd"); err == nil {
			out[tid] = cwd
		}
	}
	return out
}

// TestBrokerWorkerCwdStaysOnWorker: while workers fchdir into the
// caller's directory for every create, no other thread of the process
// (the runtime's, ones it starts meanwhile for blocking syscalls and
// locked goroutines) has its working directory moved; after Stop no
// thread is left in the sandbox's directory.
func TestBrokerWorkerCwdStaysOnWorker(t *testing.T) {
	// Not /proc/self/cwd: the leader's (M0's) may be its own, left by a
	// test's onOwnFS goroutine that ran on it (M0 is wedged, not ended).
	orig, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	leader, _ := os.Readlink("/proc/self/cwd")
	t.Logf("leader's cwd %q, the process's %q", leader, orig)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd, out, listener := startChildRun(t, "TestBrokerChildRelCreates", "CORDON_BROKER_RC_DIR="+dir, "CORDON_BROKER_RC_N=400")
	b := Start(listener, allowAll{}, Creds{})
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad sync.Map
	for range 8 { // new Ms: locked goroutines and blocking syscalls
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				runtime.LockOSThread()
				if cwd, err := os.Readlink("/proc/thread-self/cwd"); err == nil && cwd != orig {
					bad.Store(unix.Gettid(), cwd)
				}
				_ = unix.Nanosleep(&unix.Timespec{Nsec: 200000}, nil)
				runtime.UnlockOSThread()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			b.mu.Lock()
			skip := map[int]bool{os.Getpid(): true}
			for _, tid := range b.tids {
				skip[tid] = true
			}
			b.mu.Unlock()
			cwds := threadCwds(t, skip)
			b.mu.Lock() // a worker started meanwhile is a worker
			for _, tid := range b.tids {
				delete(cwds, tid)
			}
			b.mu.Unlock()
			for tid, cwd := range cwds {
				if cwd != orig {
					comm, _ := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/comm")
					bad.Store(tid, cwd+" comm "+strings.TrimSpace(string(comm)))
				}
			}
		}
	}()
	werr := cmd.Wait()
	stop.Store(true)
	wg.Wait()
	b.Stop()
	if werr != nil {
		t.Fatalf("child: %v\n%s", werr, out.String())
	}
	bad.Range(func(k, v any) bool { t.Errorf("thread %v outside the workers had cwd %v", k, v); return true })
	for tid, cwd := range threadCwds(t, map[int]bool{os.Getpid(): leader != orig}) {
		if strings.HasPrefix(cwd, dir) {
			t.Errorf("after Stop thread %d is still in %s", tid, cwd)
		}
	}
	if strings.Count(out.String(), "errno 0\n") != 400 {
		t.Errorf("creates failed:\n%s", out.String())
	}
}

// TestBrokerChildRelCreates is not a test: the child of the tests of this file.
// It changes to CORDON_BROKER_RC_DIR, installs the filter and creates
// CORDON_BROKER_RC_N files "rI" there (O_EXCL with CORDON_BROKER_RC_EXCL),
// printing each errno.
func TestBrokerChildRelCreates(t *testing.T) {
	dir := os.Getenv("CORDON_BROKER_RC_DIR")
	if dir == "" {
		t.Skip("a child")
	}
	runtime.LockOSThread()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv("CORDON_BROKER_RC_N"))
	flags := unix.O_CREAT | unix.O_WRONLY | unix.O_CLOEXEC
	if os.Getenv("CORDON_BROKER_RC_EXCL") != "" {
		flags |= unix.O_EXCL
	}
	sendCreatesListener(t)
	for i := range n {
		name := os.Getenv("CORDON_BROKER_RC_PREFIX") + "r" + strconv.Itoa(i)
		fd, err := unix.Openat(unix.AT_FDCWD, name, flags, 0o644)
		errno, _ := err.(unix.Errno)
		fmt.Printf("create %d errno %d\n", i, int(errno))
		if err == nil {
			unix.Close(fd)
		}
	}
}

// filesUnder lists every regular file under dir.
func filesUnder(t *testing.T, dir string) []string {
	var out []string
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	return out
}

// TestBrokerCreateMovedEveryAttempt: the host renames the caller's
// directory between every create and its read-back (rows: on every
// attempt; on the first k attempts; plus a symlink to a protected
// directory at the old name; with O_EXCL and an absolute path). What the
// caller gets, what is refused, and that nothing is left on the host but
// the one file the caller's open returned.
func TestBrokerCreateMovedEveryAttempt(t *testing.T) {
	rows := []struct {
		name     string
		renames  int  // attempts that see a rename; -1 every one
		symlink  bool // a symlink to guard left at the old name
		abs      bool // the child's path is absolute (the old name)
		excl     bool
		wantErrn int
		wantLeft int
	}{
		{"every-attempt", -1, false, false, false, int(unix.EAGAIN), 0},
		{"every-attempt-excl", -1, false, false, true, int(unix.EAGAIN), 0},
		{"eight-attempts", 8, false, false, false, 0, 1},
		{"nine-attempts", 9, false, false, false, int(unix.EAGAIN), 0},
		{"abs-symlink-guard", 1, true, true, true, int(unix.EACCES), 0},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "guard"), 0o755); err != nil {
				t.Fatal(err)
			}
			cur := filepath.Join(dir, "w")
			if err := os.Mkdir(cur, 0o755); err != nil {
				t.Fatal(err)
			}
			n := 0
			var hostErr error
			testHookCreated = func() {
				if r.renames >= 0 && n >= r.renames {
					return
				}
				n++
				next := filepath.Join(dir, "w"+strconv.Itoa(n))
				if err := os.Rename(cur, next); err != nil {
					hostErr = err
				}
				if r.symlink && n == 1 {
					hostErr = os.Symlink("guard", filepath.Join(dir, "w"))
				}
				cur = next
			}
			defer func() { testHookCreated = nil }()
			env := []string{"CORDON_BROKER_RC_DIR=" + cur, "CORDON_BROKER_RC_N=1"}
			if r.abs {
				env = append(env, "CORDON_BROKER_RC_PREFIX="+cur+"/")
			}
			if r.excl {
				env = append(env, "CORDON_BROKER_RC_EXCL=1")
			}
			cmd, out, listener := startChildRun(t, "TestBrokerChildRelCreates", env...)
			b := Start(listener, globPolicy{filepath.Join(dir, "guard")}, Creds{})
			werr := cmd.Wait()
			b.Stop()
			if werr != nil || hostErr != nil {
				t.Fatalf("child %v host %v\n%s", werr, hostErr, out.String())
			}
			left := filesUnder(t, dir)
			t.Logf("renames %d, child: %q, left %v, denials %+v", n, strings.TrimSpace(out.String()), left, b.Denials())
			if !strings.Contains(out.String(), "create 0 errno "+strconv.Itoa(r.wantErrn)+"\n") {
				t.Errorf("want errno %d", r.wantErrn)
			}
			if len(left) != r.wantLeft {
				t.Errorf("files left on the host: %v, want %d", left, r.wantLeft)
			}
		})
	}
}

// TestBrokerCreateHostRenameLoop: the host renames the caller's working
// directory back and forth as fast as it can while the caller makes 400
// relative files there. The kernel's own creates all succeed; here some
// fail (EAGAIN after eight moves in a row; ENOENT, see below), and every file left on the host
// is one whose open succeeded (none from a refused or repeated attempt).
func TestBrokerCreateHostRenameLoop(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, bname := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, out, listener := startChildRun(t, "TestBrokerChildRelCreates", "CORDON_BROKER_RC_DIR="+a, "CORDON_BROKER_RC_N=400", "CORDON_BROKER_RC_EXCL=1")
	br := Start(listener, allowAll{}, Creds{})
	var stop atomic.Bool
	var renames atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if os.Rename(a, bname) == nil {
				renames.Add(1)
			}
			if os.Rename(bname, a) == nil {
				renames.Add(1)
			}
		}
	}()
	werr := cmd.Wait()
	stop.Store(true)
	<-done
	br.Stop()
	if werr != nil {
		t.Fatalf("child: %v\n%s", werr, out.String())
	}
	okN := strings.Count(out.String(), "errno 0\n")
	again := strings.Count(out.String(), "errno 11\n")
	left := filesUnder(t, dir)
	t.Logf("renames %d, creates ok %d, EAGAIN %d, other %d, files left %d", renames.Load(), okN, again, 400-okN-again, len(left))
	if len(left) != okN {
		t.Errorf("%d files on the host, %d creates succeeded", len(left), okN)
	}
	// Errors other than EAGAIN (ENOENT: the caller's working directory is
	// read as a path and resolved again by name, which the host renamed
	// meanwhile) are the kernel's answer to no create of this caller's;
	// logged, not refused here: the same before the read by getcwd.
}
