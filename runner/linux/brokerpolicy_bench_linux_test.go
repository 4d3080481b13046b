package linux

import (
	"testing"

	"github.com/cordon-run/cordon/spec"
)

// BenchmarkBrokerPolicyRefuse: what deciding one created name against
// the default workspace profile's rules costs (every create, rename and
// link of a sandboxed process asks it).
func BenchmarkBrokerPolicyRefuse(b *testing.B) {
	cfg, err := spec.Profile("workspace", b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	p := newBrokerPolicy(&cfg.Sandbox)
	paths := []string{cfg.Sandbox.Root + "/c.1/d17/f42", cfg.Sandbox.Root + "/node_modules/lodash/fp/map.js", cfg.Sandbox.Root + "/u.3/tree/d001/f007.txt"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p.Refuse(paths[i%len(paths)]) != "" {
			b.Fatal("refused")
		}
	}
}
