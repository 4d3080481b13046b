package linux

import (
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/cordon-run/cordon/internal/broker"
)

// OCIBrokerPolicy is the broker's policy for cordon-oci: deny and protect
// entries given as container paths (the broker resolves every call in the
// container's own root, so its paths are container paths).
type OCIBrokerPolicy interface {
	broker.ReadPolicy
	broker.LeadPolicy
}

// NewOCIBrokerPolicy compiles deny and protect (absolute container paths)
// into the policy `cordon run`'s broker decides with.
func NewOCIBrokerPolicy(deny, protect []string) OCIBrokerPolicy {
	var p brokerPolicy
	for _, d := range deny {
		p.rules = append(p.rules, newBrokerRule("deny", d))
	}
	for _, d := range protect {
		p.rules = append(p.rules, newBrokerRule("protect", d))
	}
	return p
}

// BrokeredSeccomp is the filter c with the broker's calls notified, as
// `cordon run` loads it (without strict_deny).
func BrokeredSeccomp(c *configs.Seccomp) *configs.Seccomp {
	return brokeredSeccomp(c, false)
}

// BrokerENOSYS are the calls the brokered filter fails with ENOSYS.
func BrokerENOSYS() []string { return append([]string(nil), brokerENOSYS...) }
