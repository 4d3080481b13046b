package broker

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkBrokeredCreate: what one create costs through the broker (an
// openat with O_CREAT, notified, decided with a policy that refuses
// nothing, performed and its descriptor installed), the child's own work
// on the file (a write, an fstat and a stat) included. Compare with
// BenchmarkNotifyFloor, the same child under a listener that does nothing.
func BenchmarkBrokeredCreate(b *testing.B) {
	cmd, out, listener := startChild(b, b.TempDir(), b.N)
	b.ResetTimer()
	cpu := startCPU()
	br := Start(listener, allowAll{}, Creds{})
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
	b.StopTimer()
	cpu.report(b)
	br.Stop()
}

// cpuUse is the CPU time used so far by this process (the broker or the
// listener) and by its waited-for children (the creating child).
type cpuUse struct{ self, children time.Duration }

func startCPU() cpuUse {
	var s, c unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &s)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &c)
	return cpuUse{self: rusageCPU(s), children: rusageCPU(c)}
}

func rusageCPU(r unix.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// report adds the CPU time per create since u of this process
// (listener-cpu-µs/op: the broker's or the do-nothing listener's, the
// benchmark's own few goroutines included) and of the child
// (caller-cpu-µs/op): on a loaded machine these are steadier than the
// wall time, which is mostly waiting for a CPU.
func (u cpuUse) report(b *testing.B) {
	now := startCPU()
	b.ReportMetric(float64(now.self-u.self)/1e3/float64(b.N), "listener-cpu-µs/op")
	b.ReportMetric(float64(now.children-u.children)/1e3/float64(b.N), "caller-cpu-µs/op")
}

// BenchmarkPlainCreate: the same child's creates with no filter at all.
// BenchmarkBrokeredCreate and BenchmarkNotifyFloor less this are the cost
// of a brokered call and of a do-nothing round trip.
func BenchmarkPlainCreate(b *testing.B) {
	cmd, out, fd := startChild(b, b.TempDir(), b.N, "CORDON_BROKER_CHILD_PLAIN=1")
	unix.Close(fd)
	b.ResetTimer()
	cpu := startCPU()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
	cpu.report(b)
}

// BenchmarkNotifyFloor: the same child's creates under a listener that
// answers each at once with SECCOMP_USER_NOTIF_FLAG_CONTINUE (the round
// trip alone, the floor under any broker of this kind).
func BenchmarkNotifyFloor(b *testing.B) {
	cmd, out, listener := startChild(b, b.TempDir(), b.N)
	defer unix.Close(listener)
	b.ResetTimer()
	cpu := startCPU()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var n notif
			if err := recv(listener, &n); err != nil {
				if err == unix.EINTR || err == unix.ENOENT && !orphaned(listener) {
					continue
				}
				return
			}
			respondContinue(listener, n.ID)
		}
	}()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("the child's creates went wrong: %v\n%s", err, out.String())
	}
	b.StopTimer()
	<-done
	cpu.report(b)
}

// BenchmarkCwdRead: what reading a caller's working directory costs, per
// way it is read, for another process's (a child's: the kernel checks
// ptrace access to it, which it skips for this process's own
// descriptors): the readlink of /proc/PID/cwd (before the kept working
// directory and after it), the same from the broker's /proc descriptor
// (procDir: what cwd does now), and the path of a kept O_PATH descriptor
// of the directory through /proc/self/fd (fdPath: what the kept working
// directory cost per call). See docs/performance.md, "Cheaper calls".
func BenchmarkCwdRead(b *testing.B) {
	child := exec.Command("sleep", "600")
	child.Dir = b.TempDir()
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	kept, err := unix.Open("/proc/"+pid+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(kept)
	proc, err := procDir()
	if err != nil {
		b.Fatal(err)
	}
	rows := []struct {
		name string
		read func() (string, error)
	}{
		{"proc-pid-cwd", func() (string, error) { return linkPath("/proc/" + pid + "/cwd") }},
		{"procdir-pid-cwd", func() (string, error) { return readlinkPath(proc, pid+"/cwd") }},
		{"kept-fd", func() (string, error) { return fdPath(kept) }},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParentPath: what a create pays to read its parent directory's
// path twice (the decision's read and the read-back after the create,
// call.moved), per way: the readlink of /proc/self/fd/N twice (fdPath,
// before) and call.dirPath on a worker's thread (fchdir and getcwd, then
// getcwd alone). The directory is five components below the root.
func BenchmarkParentPath(b *testing.B) {
	dir := b.TempDir() + "/a/b/c/d"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	rows := []struct {
		name string
		read func(c *call) (string, error)
	}{
		{"readlink", func(*call) (string, error) { return fdPath(fd) }},
		{"getcwd", func(c *call) (string, error) { return c.dirPath(fd) }},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			done := make(chan struct{})
			go func() { // a worker's thread: see onOwnFS
				defer close(done)
				runtime.LockOSThread()
				if err := unix.Unshare(unix.CLONE_FS); err != nil {
					b.Error(err)
					return
				}
				for b.Loop() {
					c := &call{ownFS: true, fds: []int{fd}}
					for range 2 {
						if _, err := r.read(c); err != nil {
							b.Error(err)
							return
						}
					}
				}
			}()
			<-done
		})
	}
}
