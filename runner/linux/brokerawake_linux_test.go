package linux

import (
	"testing"

	"github.com/cordon-run/cordon/internal/broker"
	"github.com/cordon-run/cordon/spec"
)

// TestBrokerKeepsNoCPUAwakeUnderACPULimit: a sandbox with limits.cpus set
// gets no keeper (its spinning would be CPU the command causes outside its
// cgroup's limit); one without gets it.
func TestBrokerKeepsNoCPUAwakeUnderACPULimit(t *testing.T) {
	for _, tc := range []struct {
		name string
		cpus float64
		want bool
	}{
		{"no CPU limit", 0, true},
		{"limits.cpus: 0.5", 0.5, false},
		{"limits.cpus: 2", 2, false},
	} {
		cfg, err := spec.Profile("workspace", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sandbox.Limits.CPUs = tc.cpus
		var p broker.Policy = newBrokerPolicy(&cfg.Sandbox)
		ap, ok := p.(broker.AwakePolicy)
		if !ok {
			t.Fatal("the runner's broker policy does not implement broker.AwakePolicy")
		}
		if got := ap.KeepAwake(); got != tc.want {
			t.Errorf("%s: KeepAwake = %v, want %v", tc.name, got, tc.want)
		}
	}
}
