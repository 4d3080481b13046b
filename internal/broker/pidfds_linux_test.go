package broker

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPidfdsEvictionKeepsTakesApart: a worker that evicts the pidfd cache
// (here at one entry) while another worker is between finding its cached
// pidfd and pidfd_getfd must not make that worker take a descriptor of
// another process. Before the fix the eviction closed the pidfd in use,
// the next pidfd_open reused its number for the second process, and the
// first worker took the second process's descriptor 3.
func TestPidfdsEvictionKeepsTakesApart(t *testing.T) {
	dir := t.TempDir()
	start := func(name string) (*exec.Cmd, uint64) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sleep", "60")
		cmd.ExtraFiles = []*os.File{f} // its descriptor 3
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd, st.Ino
	}
	a, inoA := start("a")
	b, inoB := start("b")
	live := func() error { return nil }

	p := &pidfds{max: 1}
	// Warm the cache with a's pidfd, so a's next take finds it cached.
	fd, err := p.take(a.Process.Pid, 3, live)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)

	inWindow, bDone := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	p.beforeGetfd = func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		close(inWindow)
		// Give b's take the chance to evict and reopen; with the fix it
		// waits for this one instead, so this wait runs out.
		select {
		case <-bDone:
		case <-time.After(300 * time.Millisecond):
		}
	}
	type got struct {
		fd  int
		err error
	}
	aGot := make(chan got, 1)
	go func() {
		fd, err := p.take(a.Process.Pid, 3, live)
		aGot <- got{fd, err}
	}()
	<-inWindow
	fdB, err := p.take(b.Process.Pid, 3, live)
	close(bDone)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fdB)
	ga := <-aGot
	if ga.err != nil {
		t.Fatal(ga.err)
	}
	defer unix.Close(ga.fd)
	for _, c := range []struct {
		who  string
		fd   int
		want uint64
	}{{"a", ga.fd, inoA}, {"b", fdB, inoB}} {
		var st unix.Stat_t
		if err := unix.Fstat(c.fd, &st); err != nil {
			t.Fatal(err)
		}
		if st.Ino != c.want {
			t.Errorf("descriptor 3 taken for process %s is inode %d, want its own file's %d (another process's descriptor was taken)", c.who, st.Ino, c.want)
		}
	}
}
