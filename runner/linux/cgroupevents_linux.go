package linux

import (
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/runner/linux/internal/cgroup"
)

// eventWatch sees the memory cgroup kill a process, or the pids cgroup
// refuse a fork, while a run is live. A scope from the user's systemd can
// be gone by the time the run ends (systemd stops a unit on an OOM kill and
// removes an empty scope's cgroup), taking its counters with it, so they
// are read each time the kernel changes memory.events or pids.events
// instead of once at the end.
type eventWatch struct {
	memory, pids string // the events files watched, "" when not
	fd           int
	stopR, stopW *os.File
	oomKilled    atomic.Bool
	pidsMax      atomic.Bool
	done         chan struct{}
}

// watchEvents starts watching the memory.events (when memory) and
// pids.events (when pids) of cgroup directory dir.
func watchEvents(dir string, memory, pids bool) (*eventWatch, error) {
	w := &eventWatch{done: make(chan struct{})}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	for _, f := range []struct {
		want bool
		name string
		path *string
	}{{memory, "memory.events", &w.memory}, {pids, "pids.events", &w.pids}} {
		if !f.want {
			continue
		}
		p := filepath.Join(dir, f.name)
		if _, err := unix.InotifyAddWatch(fd, p, unix.IN_MODIFY); err != nil {
			unix.Close(fd)
			return nil, os.NewSyscallError("inotify_add_watch "+p, err)
		}
		*f.path = p
	}
	w.stopR, w.stopW, err = os.Pipe()
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	w.fd = fd
	w.check()
	go w.loop()
	return w, nil
}

// check reads the counters; a cgroup already removed reads as zero and
// changes nothing.
func (w *eventWatch) check() {
	if w.memory != "" && cgroup.Counter(w.memory, "oom_kill") > 0 {
		w.oomKilled.Store(true)
	}
	if w.pids != "" && cgroup.Counter(w.pids, "max") > 0 {
		w.pidsMax.Store(true)
	}
}

func (w *eventWatch) loop() {
	defer close(w.done)
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.stopR.Fd()), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents != 0 {
			// Drain the events; any of them means "read the counters".
			for {
				if n, err := unix.Read(w.fd, buf); n <= 0 || err != nil {
					break
				}
			}
			w.check()
		}
	}
}

// OOMKilled reports whether an OOM kill was seen.
func (w *eventWatch) OOMKilled() bool { return w != nil && w.oomKilled.Load() }

// PidsLimited reports whether the pids limit refused a fork.
func (w *eventWatch) PidsLimited() bool { return w != nil && w.pidsMax.Load() }

// Stop reads the counters a last time and ends the watch; call it once.
func (w *eventWatch) Stop() {
	w.check()
	w.stopW.Close()
	<-w.done
	w.stopR.Close()
	unix.Close(w.fd)
}
