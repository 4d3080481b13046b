package broker

import (
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestUmaskKept: a thread's umask is kept with a pidfd of the thread and
// used again; a umask(2) anywhere drops every kept value, and none is kept
// while the thread that called it has not made its next call (settle) or
// exited; a kept value whose thread exited is not used (its tid may be
// another's).
func TestUmaskKept(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	me := unix.Gettid()
	var u umasks
	defer u.closeAll()
	keepMine := func(mask int) {
		t.Helper()
		_, hit, gen, keep := u.cached(me)
		if hit || !keep {
			t.Fatalf("before store: hit %v keep %v", hit, keep)
		}
		pfd, err := openThreadPidfd(me)
		if err != nil {
			t.Fatal(err)
		}
		u.store(me, pfd, mask, gen)
	}
	keepMine(0o027)
	if m, hit, _, _ := u.cached(me); !hit || m != 0o027 {
		t.Fatalf("kept: %o %v", m, hit)
	}

	// Another live thread of this process (it shares the fs_struct)
	// calls umask(2).
	tid, end := sharingThread(t)
	u.changing(tid)
	if _, hit, _, keep := u.cached(me); hit || keep {
		t.Fatalf("while a umask(2) is under way: hit %v keep %v", hit, keep)
	}
	u.settle(tid)
	if _, hit, _, keep := u.cached(me); hit || !keep {
		t.Fatalf("after the caller came back: hit %v keep %v", hit, keep)
	}

	// A caller that exits in its umask(2) no longer holds the cache back.
	u.changing(tid)
	end()
	if _, _, _, keep := u.cached(me); !keep {
		t.Fatal("a umask(2) caller that exited still holds the cache back")
	}

	// A process with its own fs_struct holds back only itself and those
	// that share it: a shell that changed its umask and waits for its
	// children would otherwise keep them all from being kept.
	child := exec.Command("sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	u.changing(child.Process.Pid)
	if _, hit, _, keep := u.cached(me); hit || !keep {
		t.Fatalf("an unrelated process's umask(2) held this thread back: hit %v keep %v", hit, keep)
	}
	keepMine(0o022) // stored too, not only read (a read per call, and a pidfd opened each time)
	if m, hit, _, _ := u.cached(me); !hit || m != 0o022 {
		t.Fatalf("not kept while an unrelated process's umask(2) is under way: %o %v", m, hit)
	}
	u.settle(child.Process.Pid)

	// A value stored under a generation before a umask(2) is not kept.
	_, _, gen, _ := u.cached(me)
	u.changing(me)
	u.settle(me)
	pfd, err := openThreadPidfd(me)
	if err != nil {
		t.Fatal(err)
	}
	u.store(me, pfd, 0o077, gen)
	if _, hit, _, _ := u.cached(me); hit {
		t.Fatal("a value read before a umask(2) was kept")
	}

	// A kept value whose thread exited is read again.
	dead := exec.Command("true")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	dpfd, err := unix.PidfdOpen(dead.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, gen, _ = u.cached(dead.Process.Pid)
	u.store(dead.Process.Pid, dpfd, 0o002, gen)
	_ = dead.Wait()
	if _, hit, _, _ := u.cached(dead.Process.Pid); hit {
		t.Fatal("the kept umask of an exited thread was used")
	}
}

// sharingThread starts an OS thread of this process (Go's threads share
// the fs_struct) and returns its tid and a function that ends it (and
// waits until its pidfd says it exited).
func sharingThread(t *testing.T) (int, func()) {
	t.Helper()
	tids, quit := make(chan int), make(chan struct{})
	var tid int
	for {
		go func() {
			runtime.LockOSThread()
			me := unix.Gettid()
			tids <- me
			if me == unix.Getpid() {
				// The main thread does not end with its goroutine.
				runtime.UnlockOSThread()
				return
			}
			<-quit // never unlocked: the thread ends with the goroutine
		}()
		if tid = <-tids; tid != unix.Getpid() {
			break
		}
	}
	pfd, err := openThreadPidfd(tid)
	if err != nil {
		t.Fatal(err)
	}
	done := false
	end := func() {
		if done {
			return
		}
		done = true
		close(quit)
		p := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
		for {
			if n, err := unix.Poll(p, -1); n > 0 || err != nil && err != unix.EINTR {
				break
			}
		}
		unix.Close(pfd)
	}
	t.Cleanup(end)
	return tid, end
}

// TestPeekOnePoll: peek answers, in one poll, whether another notification
// waits (more) and whether the caller's kept entry is still its thread's
// (seen); the entry of a thread that exited is not seen and is dropped
// (its tid may be another thread's).
func TestPeekOnePoll(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	b := &Broker{fd: p[0]} // a pipe stands in for the listener: readable is "more"
	defer b.umasks.closeAll()
	tid, end := sharingThread(t)
	pfd, err := openThreadPidfd(tid)
	if err != nil {
		t.Fatal(err)
	}
	_, _, gen, _ := b.umasks.cached(tid)
	b.umasks.store(tid, pfd, 0o022, gen)
	if more, seen := b.peek(tid); more || !seen {
		t.Fatalf("idle listener, live thread: more %v seen %v", more, seen)
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if more, seen := b.peek(tid); !more || !seen {
		t.Fatalf("waiting notification, live thread: more %v seen %v", more, seen)
	}
	end()
	if _, seen := b.peek(tid); seen {
		t.Fatal("the kept entry of an exited thread was seen as its tid's")
	}
	if _, hit, _, _ := b.umasks.cached(tid); hit {
		t.Fatal("the kept entry of an exited thread was not dropped")
	}
}
