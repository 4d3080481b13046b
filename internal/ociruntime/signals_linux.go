package ociruntime

import (
	"os"
	"os/signal"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/system"
	"github.com/opencontainers/runc/libcontainer/utils"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

const signalBufferSize = 2048

// newSignalHandler starts catching every signal before the container
// starts, so that none is lost; the handler comes on the channel.
func newSignalHandler(subreaper bool) chan *signalHandler {
	if subreaper {
		if err := system.SetSubreaper(1); err != nil {
			logrus.Warn(err)
		}
	}
	ch := make(chan *signalHandler)
	s := make(chan os.Signal, signalBufferSize)
	// SIGCHLD first, so that an early exit is not missed.
	signal.Notify(s, unix.SIGCHLD)
	go func() {
		signal.Notify(s)
		ch <- &signalHandler{signals: s}
	}()
	return ch
}

type signalHandler struct {
	signals chan os.Signal
}

// forward relays signals to the container's process and returns its exit
// status, as runc's forward does; a detached run returns at once.
func (h *signalHandler) forward(p *libcontainer.Process, t *tty, detach bool) (int, error) {
	if detach {
		return 0, nil
	}
	pid1, err := p.Pid()
	if err != nil {
		return -1, err
	}
	_ = t.resize()
	for s := range h.signals {
		switch s {
		case unix.SIGWINCH:
			_ = t.resize()
		case unix.SIGCHLD:
			for _, e := range reap() {
				if e.pid == pid1 {
					_, _ = p.Wait()
					return e.status, nil
				}
			}
		case unix.SIGURG:
			// Go's runtime preempts goroutines with it.
		default:
			if err := p.Signal(s); err != nil {
				logrus.Debugf("forward %v: %v", s, err)
			}
		}
	}
	return -1, nil
}

type exit struct{ pid, status int }

func reap() (exits []exit) {
	var ws unix.WaitStatus
	var rus unix.Rusage
	for {
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, &rus)
		if err != nil || pid <= 0 {
			return exits
		}
		exits = append(exits, exit{pid: pid, status: utils.ExitStatus(ws)})
	}
}
