package ociruntime

import (
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/cordon-run/cordon/internal/broker"
)

// Backend is what cordon-oci takes from cordon's Linux backend
// (runner/linux): the broker's seccomp filter and policy, and the
// conversion of an OCI process to libcontainer's. The composition root
// (package cordon, OCIMain) passes runner/linux's to Main, so that no
// package below the root imports the backend, which has no compatibility
// promise.
type Backend struct {
	// BrokeredSeccomp is the filter c with the broker's calls notified,
	// as `cordon run` loads it (without strict_deny).
	BrokeredSeccomp func(c *configs.Seccomp) *configs.Seccomp
	// NewProcess converts an OCI process to libcontainer's, as a run's.
	NewProcess func(p *specs.Process) (*libcontainer.Process, error)
	// NewBrokerPolicy compiles deny and protect (absolute container
	// paths) into the policy `cordon run`'s broker decides with.
	NewBrokerPolicy func(deny, protect []string) BrokerPolicy
}

// BrokerPolicy is the broker's policy for one container: its deny and
// protect entries, decided at container paths.
type BrokerPolicy interface {
	broker.ReadPolicy
	broker.LeadPolicy
}

// backend is the Backend Main was given: set once, before any command of
// this process runs.
var backend Backend
