package ociruntime

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/netguard"
)

// With an allow list, the guard's device is made while the container's
// init still works, not after it: libcontainer records the init's pid in
// the container's state.json once the init is ready (its namespaces,
// mounts and network made), and only then does the init compile and load
// its seccomp filter (several milliseconds for podman's profile with the
// broker's calls), after which it sends the descriptor create waits for.
// So create watches the state directory and makes the device in the
// init's namespace as soon as the pid is written, beside that work; the
// gate (handoff_linux.go) takes it when the descriptor comes, and makes
// it then if the watch saw nothing. The device is made in the same
// namespace, by the same code, and the init's last call is still let
// through only once it exists: the device's making moves, not what
// holds.

// earlyTun is the device made ahead, once the state names the init.
type earlyTun struct {
	fd   int // the inotify descriptor, the watching goroutine's
	stop int // an eventfd: take ends the watch through it
	res  chan earlyResult
	// claimed is set by whichever makes the device: the watch, once the
	// state names the init, or take, when the watch has not begun it
	// (the gate then makes it at once, with the pid it has, rather than
	// wait for the watch to read the state: on a busy machine the watching
	// thread, preempted there, held create up to 17 ms).
	claimed atomic.Bool
}

type earlyResult struct {
	pid int
	dev *netguard.Device
	err error
}

var (
	errNoState = errors.New("the state named no init")
	errClaimed = errors.New("the gate makes the device")
)

// watchState starts making the device of container dir (its state
// directory) once libcontainer writes the init's pid there. It returns
// nil when the directory cannot be watched: the gate then makes the
// device when the init's descriptor comes.
func watchState(dir string, allow []string) *earlyTun {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	// libcontainer writes a temporary file and renames it to state.json.
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	e := &earlyTun{fd: fd, stop: stop, res: make(chan earlyResult, 1)}
	go func() {
		pid, err := e.initPid(dir)
		if err == nil && !e.claimed.CompareAndSwap(false, true) {
			err = errClaimed
		}
		if err != nil {
			e.res <- earlyResult{err: err}
			return
		}
		dev, err := tunFor(pid, allow)
		e.res <- earlyResult{pid: pid, dev: dev, err: err}
	}()
	return e
}

// initPid waits for a state.json of dir that names the init's pid, or
// for take; an event already queued when take comes is still read.
func (e *earlyTun) initPid(dir string) (int, error) {
	defer unix.Close(e.fd)
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(e.fd), Events: unix.POLLIN}, {Fd: int32(e.stop), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, fmt.Errorf("watch the state: %w", err)
		}
		for {
			n, err := unix.Read(e.fd, buf)
			if err != nil || n <= 0 {
				break
			}
			if pid := statePid(dir, buf[:n]); pid > 0 {
				return pid, nil
			}
		}
		if fds[1].Revents != 0 {
			return 0, errNoState
		}
	}
}

// statePid is the init's pid in dir's state.json when the inotify events
// in b name it (0: not yet).
func statePid(dir string, b []byte) int {
	if !namesState(b) {
		return 0
	}
	f, err := os.Open(filepath.Join(dir, "state.json"))
	if err != nil {
		return 0
	}
	defer f.Close()
	return initPidOf(f)
}

// initPidOf reads the top-level init_process_pid of libcontainer's state
// from r (0: none), as a stream: libcontainer writes it second, before the
// container's whole config, which is not read. Decoding the whole state
// (tens of kilobytes with podman's seccomp profile) took up to 15 ms on a
// busy machine, while create waited for the device it starts.
func initPidOf(r io.Reader) int {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return 0
		}
		if key == "init_process_pid" {
			var pid int
			if dec.Decode(&pid) != nil {
				return 0
			}
			return pid
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return 0
		}
	}
	return 0
}

// namesState reports whether the inotify events in b name state.json.
func namesState(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		// struct inotify_event: wd, mask, cookie, then len, the name's room.
		n := int(binary.NativeEndian.Uint32(b[12:16]))
		end := unix.SizeofInotifyEvent + n
		if end > len(b) {
			return false
		}
		if name := bytes.TrimRight(b[unix.SizeofInotifyEvent:end], "\x00"); string(name) == "state.json" {
			return true
		}
		b = b[end:]
	}
	return false
}

// take ends the watch and returns the device made for pid, if the watch
// began one (it waits for it); a device made for another pid is closed.
// When the watch has not begun one, take returns nil at once and the
// watch ends on its own.
func (e *earlyTun) take(pid int) *netguard.Device {
	mine := e.claimed.CompareAndSwap(false, true)
	one := make([]byte, 8)
	binary.NativeEndian.PutUint64(one, 1)
	_, _ = unix.Write(e.stop, one)
	if mine {
		go func() {
			<-e.res
			unix.Close(e.stop)
		}()
		return nil
	}
	r := <-e.res
	unix.Close(e.stop)
	if r.err != nil || r.dev == nil {
		return nil
	}
	if r.pid != pid {
		r.dev.Close()
		return nil
	}
	return r.dev
}

// earlyOf is the gate's device made ahead (nil: none).
type earlyOf struct {
	mu sync.Mutex
	e  *earlyTun
}

func (o *earlyOf) set(e *earlyTun) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.e = e
}

func (o *earlyOf) get() *earlyTun {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.e
	o.e = nil
	return e
}

// tunOf is the device for the init pid: the one made ahead, or a new one.
func (g *gate) tunOf(pid int) (*netguard.Device, error) {
	if e := g.early.get(); e != nil {
		if dev := e.take(pid); dev != nil {
			return dev, nil
		}
	}
	return tunFor(pid, g.cfg.Allow)
}

// dropEarly closes a device made ahead that was never handed over (the
// container failed first).
func (g *gate) dropEarly() {
	if e := g.early.get(); e != nil {
		e.take(-1) // closes what it made: no init has pid -1
	}
}

// watch starts making, ahead, the device of the container whose state
// directory is dir (with an allow list; call it before the init starts).
func (g *gate) watch(dir string) {
	if len(g.cfg.Allow) > 0 {
		g.early.set(watchState(dir, g.cfg.Allow))
	}
}
