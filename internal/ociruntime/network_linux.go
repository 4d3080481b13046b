package ociruntime

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"

	"github.com/cordon-run/cordon/internal/audit"
	"github.com/cordon-run/cordon/internal/netguard"
)

// A container with run.cordon.network.allow gets cordon's network guard
// as a `cordon run` sandbox does: its supervisor makes a network namespace
// of its own (it belongs to the runtime's user namespace), the guard's tun
// device, routes and DNS sockets in it, and attaches the guard (its
// userspace stack decides each connection by the allow list, with the SNI
// and Host checks) before the container exists; the container's init
// joins that namespace instead of making one. So the guard sees every
// packet from the first, and the namespace ends with the container.

// checkNetwork refuses an allow list on a container whose network is not
// its own new namespace: one that shares the host's (podman --network
// host) or joins another by path (podman's bridge, a Kubernetes pod's),
// where the guard would not see what leaves, or one with a user namespace
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
	}
	return nil
}

// joinNetns has the container's init join path instead of making a
// network namespace.
func joinNetns(cfg *configs.Config, path string) {
	cfg.Namespaces.Remove(configs.NEWNET)
	cfg.Namespaces.Add(configs.NEWNET, path)
}

// guardNet is the supervisor's network guard.
type guardNet struct {
	g  *netguard.Guard
	ns *os.File
}

// startNetwork makes the namespace, its device and the guard, and returns
// the path the init joins the namespace by.
func (s *supervisor) startNetwork() (string, error) {
	rules, err := netguard.ParseRules(s.cfg.Allow)
	if err != nil {
		return "", fmt.Errorf("network allow list: %w", err)
	}
	g, err := netguard.New(netguard.Config{Allow: s.cfg.Allow, OnEvent: s.netEvent})
	if err != nil {
		return "", fmt.Errorf("network allow list: %w", err)
	}
	ns, err := netguard.NewNamespace()
	if err != nil {
		g.Close()
		return "", fmt.Errorf("network allow list: %w", err)
	}
	dev, err := netguard.TunIn(ns, netguard.LoopbackResolvers("/etc/resolv.conf"), netguard.LoopbackForwards(rules))
	if err == nil {
		if err = g.Attach(dev); err != nil {
			dev.Close()
		}
	}
	if err != nil {
		ns.Close()
		g.Close()
		return "", fmt.Errorf("network allow list: %w", err)
	}
	s.net = &guardNet{g: g, ns: ns}
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.Fd()), nil
}

// stopNetwork closes the guard (the container is gone).
func (s *supervisor) stopNetwork() {
	if s.net == nil {
		return
	}
	if err := s.net.g.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		logrus.WithField("container", s.cfg.ID).Errorf("cordon-oci network guard: %v", err)
	}
	s.net.ns.Close()
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
