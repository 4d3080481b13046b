package cordon

import (
	"github.com/cordon-run/cordon/internal/ociruntime"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
)

// OCIMain runs cordon-oci, cordon's OCI runtime with runc's command line
// (docs/oci.md), on args (without the program name) and returns its exit
// status. The runtime reuses this backend's broker and process conversion,
// wired here: only the root package imports the backend.
func OCIMain(args []string) int {
	return ociruntime.Main(args, Version(), ociBackend)
}

// ociBackend is what cordon-oci takes from the Linux backend.
var ociBackend = ociruntime.Backend{
	BrokeredSeccomp: runnerlinux.BrokeredSeccomp,
	NewProcess:      runnerlinux.NewProcess,
	NewBrokerPolicy: func(deny, protect []string) ociruntime.BrokerPolicy {
		return runnerlinux.NewOCIBrokerPolicy(deny, protect)
	},
}
