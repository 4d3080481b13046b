package ociruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/internal/netguard"
)

// supervisor is cordon-oci __broker: it serves the notification
// descriptor of each process libcontainer starts in one container (with
// deny, protect or audit) and the network guard (with an allow list), and
// ends with the container's init (or on SIGTERM, which delete sends).
type supervisor struct {
	cfg    brokerConfig
	policy observed
	mu     sync.Mutex
	bs     []*broker.Broker
	initFD int       // a pidfd of the container's init
	net    *guardNet // the network guard, with an allow list
	// netReady says whether the guard was made (nil: no allow list).
	netReady chan error
}

// observed is the container's policy, which hears of each refusal as it
// is made and writes it, typed, to the runtime log and the audit log.
type observed struct {
	BrokerPolicy
	id  string
	log *audit.Log
}

// KeepAwake is broker.AwakePolicy: cordon-oci's supervisor keeps no CPU
// busy (internal/awake): it runs outside the container's cgroup, and a
// container's CPU is its orchestrator's to account and limit.
func (o observed) KeepAwake() bool { return false }

// Denied logs d; the Observer interface of internal/broker.
func (o observed) Denied(d broker.Denial) {
	kind, _, _ := strings.Cut(d.Rule, " ")
	detail := refusalDetail(d)
	logrus.WithFields(logrus.Fields{"cordon": "refused", "container": o.id, "op": d.Op, "path": d.Path, "rule": d.Rule}).Warn(detail)
	if err := o.log.Append(audit.Record{Event: audit.EventDenial, Source: audit.SourceRunner, RunID: o.id,
		Op: d.Op, Path: d.Path, Rule: kind, Detail: detail}); err != nil {
		logrus.WithField("container", o.id).Errorf("cordon-oci broker: the audit log: %v", err)
	}
}

// refusalDetail is the refusal as the runtime log gives it: what was
// refused, by which entry, and what the container may do instead.
func refusalDetail(d broker.Denial) string {
	what := "the container may read it but never create, change, rename or remove it"
	switch {
	case strings.HasPrefix(d.Rule, "deny "):
		what = "the container may never read, create, change, rename or remove it"
	case d.Rule == broker.ReadOnly:
		what = "the file system there is read-only"
	case d.Rule == broker.Busy:
		what = "the container may try again once the other process lets go of the directory's lock"
	}
	return fmt.Sprintf("cordon refused %s of %s (%s): %s", d.Op, d.Path, d.Rule, what)
}

// supervisorTestHook, when set (only in a test build: see
// testhooks_linux.go), runs first in the supervisor: a slow start.
var supervisorTestHook func()

// brokerMain runs the supervisor role: args[0] is create's brokerConfig;
// fd 3 is the handoff socket (handoff_linux.go).
func brokerMain(args []string) int {
	if len(args) != 1 {
		return fatal(fmt.Errorf("%w: %s is cordon-oci's own role, started by create", ErrUsage, brokerRole), 1)
	}
	if supervisorTestHook != nil {
		supervisorTestHook()
	}
	var cfg brokerConfig
	if err := json.Unmarshal([]byte(args[0]), &cfg); err != nil {
		return fatal(fmt.Errorf("cordon-oci broker: its config: %w", err), 1)
	}
	s := &supervisor{cfg: cfg, initFD: -1}
	s.policy = observed{BrokerPolicy: backend.NewBrokerPolicy(cfg.Deny, cfg.Protect), id: cfg.ID}
	if cfg.Audit != "" {
		s.policy.log = audit.New("oci", cfg.Audit)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if len(cfg.Allow) > 0 {
		// The guard is made while create makes the container and its
		// device; its packets wait in the device until it is attached.
		s.netReady = make(chan error, 1)
		go func() { s.netReady <- s.startNetwork() }()
	}
	type result struct {
		h   handed
		err error
	}
	got := make(chan result, 1)
	go func() {
		h, err := recvHandoff(os.NewFile(3, "handoff"))
		got <- result{h, err}
	}()
	var h handed
	select {
	case <-term:
		return 0
	case r := <-got:
		if errors.Is(r.err, errNoHandoff) {
			return 0
		}
		if r.err != nil {
			return fatal(fmt.Errorf("cordon-oci broker: %w", r.err), 1)
		}
		h = r.h
	}
	s.initFD = h.pidfd
	if h.l != nil {
		s.serve(h.seccompFD)
	}
	if s.netReady != nil {
		s.attach(h.dev)
	} else if h.dev != nil {
		h.dev.Close()
	}
	if h.l != nil {
		go s.accept(h.l)
	}
	s.waitInit(term)
	if h.l != nil {
		// No process of the container is left to send a descriptor.
		_ = os.Remove(h.l.Addr().String())
		h.l.Close()
	}
	s.stopAll()
	s.stopNetwork()
	return 0
}

// attach gives the guard its device. A guard that cannot be made or
// attached ends the container: its packets never leave the device.
func (s *supervisor) attach(dev *netguard.Device) {
	err := <-s.netReady
	if err == nil && dev == nil {
		err = errors.New("create handed over no device")
	}
	if err == nil {
		err = s.net.g.Attach(dev)
	}
	if err == nil {
		return
	}
	if dev != nil {
		dev.Close()
	}
	logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci broker: network allow list: %v; the container is killed", err)
	_ = unix.PidfdSendSignal(s.initFD, unix.SIGKILL, nil, 0)
}

// waitInit returns when the container's init has exited, or on a signal.
func (s *supervisor) waitInit(term chan os.Signal) {
	exited := make(chan struct{})
	go func() {
		waitPidfd(s.initFD, 1<<62)
		close(exited)
	}()
	select {
	case <-term:
	case <-exited:
	}
}

// accept serves each exec'd process's descriptor as it comes.
func (s *supervisor) accept(l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return
		}
		if err := runtimePeer(c); err != nil {
			c.Close()
			logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci broker: %v", err)
			continue
		}
		_, fd, err := recvSeccompFD(c)
		c.Close()
		if err != nil {
			logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci broker: %v", err)
			continue
		}
		s.serve(fd)
	}
}

// serve starts a broker on fd.
func (s *supervisor) serve(fd int) {
	b := broker.Start(fd, s.policy, s.cfg.Creds)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bs = append(s.bs, b)
}

func (s *supervisor) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.bs {
		b.Stop()
		if err := b.Err(); err != nil {
			logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci broker: %v", err)
		}
	}
	s.bs = nil
}

// runtimePeer refuses a connection from anyone but the runtime's own user:
// libcontainer's parent process (cordon-oci create or exec, as that user)
// sends the seccomp descriptor, never the container. The socket is 0600
// from its bind (startBroker), and this holds even where the state root
// lets others in.
func runtimePeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("the connecting process: %w", err)
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return fmt.Errorf("the connecting process: %w", err)
	}
	if credErr != nil {
		return fmt.Errorf("the connecting process: %w", credErr)
	}
	if want := uint32(os.Getuid()); cred.Uid != want {
		return fmt.Errorf("refused a connection from uid %d (pid %d): only the runtime's user (uid %d) sends a seccomp descriptor", cred.Uid, cred.Pid, want)
	}
	return nil
}

// recvSeccompFD reads libcontainer's message to a seccomp agent: the
// container process's state as JSON, and the descriptor.
func recvSeccompFD(c *net.UnixConn) (specs.ContainerProcessState, int, error) {
	var st specs.ContainerProcessState
	buf := make([]byte, 1<<16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return st, -1, fmt.Errorf("receive the seccomp descriptor: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return st, -1, errors.New("receive the seccomp descriptor: no descriptor came with the message")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return st, -1, errors.New("receive the seccomp descriptor: not one descriptor")
	}
	unix.CloseOnExec(fds[0])
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		unix.Close(fds[0])
		return st, -1, fmt.Errorf("the container's state with the seccomp descriptor: %w", err)
	}
	return st, fds[0], nil
}
