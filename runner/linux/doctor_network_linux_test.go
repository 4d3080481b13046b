package linux

import (
	"strings"
	"testing"
)

// TestDoctorNetworkGuard: doctor says whether allow lists are enforced,
// from the same probe the table reads.
func TestDoctorNetworkGuard(t *testing.T) {
	for _, ok := range []bool{true, false} {
		c := networkGuardCap(guardFacts(ok))
		if c.OK != ok || (ok && !strings.HasPrefix(c.Detail, "enforced")) || (!ok && !strings.Contains(c.Detail, "/dev/net/tun")) {
			t.Errorf("guard %v: %+v", ok, c)
		}
	}
}
