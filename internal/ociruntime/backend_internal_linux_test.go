package ociruntime

import (
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
)

// The internal tests call what Main would have wired: the Linux backend's
// pieces, as the root package passes them (oci_linux.go).
func init() {
	backend = Backend{
		BrokeredSeccomp: runnerlinux.BrokeredSeccomp,
		NewProcess:      runnerlinux.NewProcess,
		NewBrokerPolicy: func(deny, protect []string) BrokerPolicy { return runnerlinux.NewOCIBrokerPolicy(deny, protect) },
	}
}
