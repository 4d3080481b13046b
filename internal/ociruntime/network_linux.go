package ociruntime

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/netguard"
)

// A container with run.cordon.network.allow gets cordon's network guard
// as a `cordon run` sandbox does: the container's init makes its network
// namespace as under runc, and create, before it lets the init's last
// call through (the exec FIFO, see initfifo_linux.go), makes the guard's
// tun device, routes and DNS sockets in that namespace (tunFor) and hands
// them to the supervisor, which attaches the guard (its userspace stack
// decides each connection by the allow list, with the SNI and Host
// checks). So the container's command starts only once every packet can
// leave only through the device, where it waits until the guard reads it
// (handoff_linux.go), and the namespace, with the device, ends with the
// container.

// checkNetwork refuses an allow list on a container whose network is not
// its own new namespace: one that shares the host's (podman --network
// host) or joins another by path (podman's bridge, a Kubernetes pod's),
// where the guard would not see what leaves, one into which the spec moves
// host network devices (linux.netDevices: routes beside the guard's,
// TestOCINetworkRefusesNetDevices), or one with a user namespace
// of its own, which the runtime cannot make the namespace for.
func checkNetwork(s *specs.Spec) error {
	fix := "give the container a network namespace of its own with no network (podman --network none; ctr's default), which the guard then connects, or leave " + AnnotationNetworkAllow + " out and restrict egress with the cluster's network policy"
	var ns []specs.LinuxNamespace
	if s.Linux != nil {
		ns = s.Linux.Namespaces
	}
	if slices.ContainsFunc(ns, func(n specs.LinuxNamespace) bool { return n.Type == specs.UserNamespace }) {
		return &AnnotationError{Annotation: AnnotationNetworkAllow, Problem: "the container has a user namespace of its own, in which cordon-oci cannot make the guard's network namespace", Fix: fix}
	}
	i := slices.IndexFunc(ns, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace })
	switch {
	case i < 0:
		return &AnnotationError{Annotation: AnnotationNetworkAllow, Problem: "the container shares the host's network (no network namespace in its spec), which the guard cannot stand in front of", Fix: fix}
	case ns[i].Path != "":
		return &AnnotationError{Annotation: AnnotationNetworkAllow, Problem: fmt.Sprintf("the container joins the network namespace %s, whose traffic does not pass the guard", ns[i].Path), Fix: fix}
	case len(s.Linux.NetDevices) > 0:
		names := slices.Sorted(maps.Keys(s.Linux.NetDevices))
		return &AnnotationError{Annotation: AnnotationNetworkAllow, Problem: fmt.Sprintf("the container's spec moves the host's network devices %s into its namespace (linux.netDevices), a route out beside the guard's", strings.Join(names, ", ")), Fix: "leave linux.netDevices out of the spec, or " + AnnotationNetworkAllow + " out and restrict egress with the cluster's network policy"}
	}
	return nil
}

// guardNet is the supervisor's network guard.
type guardNet struct {
	g *netguard.Guard
}

// startNetwork makes the guard (its policy and stack need no container),
// while the container is made.
func (s *supervisor) startNetwork() error {
	g, err := netguard.New(netguard.Config{Allow: s.cfg.Allow, OnEvent: s.netEvent})
	if err != nil {
		return fmt.Errorf("network allow list: %w", err)
	}
	s.net = &guardNet{g: g}
	return nil
}

// sameFile reports whether f is the file at path (a namespace).
func sameFile(f *os.File, path string) (bool, error) {
	var a, b unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &a); err != nil {
		return false, err
	}
	if err := unix.Stat(path, &b); err != nil {
		return false, err
	}
	return a.Dev == b.Dev && a.Ino == b.Ino, nil
}

// stopNetwork closes the guard (the container is gone).
func (s *supervisor) stopNetwork() {
	if s.net == nil {
		return
	}
	if err := s.net.g.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci network guard: %v", err)
	}
	s.net = nil
}

// netEvent writes each decision of the guard to the audit log, and each
// refusal, typed, to the runtime log.
func (s *supervisor) netEvent(e netguard.Event) {
	if e.Decision == netguard.Deny {
		logrus.WithFields(logrus.Fields{"cordon": "refused", "container": s.cfg.ID, "op": "connect", "proto": e.Proto,
			"host": e.Host, "addr": e.Addr, "port": e.Port, "rule": "network", "reason": e.Reason}).Warn(e.Detail)
	}
	if err := s.policy.log.Append(audit.Record{Event: audit.EventNet, RunID: s.cfg.ID, Network: &e}); err != nil {
		logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci network guard: the audit log: %v", err)
	}
}
