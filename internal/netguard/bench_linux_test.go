package netguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-run/cordon/internal/netguard/nettest"
)

// BenchmarkTunAndGuard: what an allow list adds to a run's start and end:
// the tun device made and configured in a network namespace, the guard
// started over it, and closed.
func BenchmarkTunAndGuard(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	name := "cordon-bench-" + filepath.Base(b.TempDir())
	nettest.Run(b, "ip", "netns", "add", name)
	b.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ns, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	b.Run("tun", func(b *testing.B) {
		for b.Loop() {
			tun, err := tunInThread(ns, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			// Closing unregisters the device, which waits for RCU grace
			// periods; a run does it after its result (see Guard.Close).
			b.StopTimer()
			tun.Close()
			b.StartTimer()
		}
	})
	b.Run("tun+guard", func(b *testing.B) {
		for b.Loop() {
			tun, err := tunInThread(ns, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			g, err := Start(tun, Config{Allow: []string{"allowed.test:80"}})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			g.Close()
			b.StartTimer()
		}
	})
}
