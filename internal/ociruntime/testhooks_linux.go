//go:build cordon_testhooks

package ociruntime

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A test build (-tags cordon_testhooks: TestMain's and the rootless
// lane's binaries, never make build's) slows the supervisor's start by the
// duration in the file cordon-oci-test-supervisor-delay beside the binary,
// a host path no container reaches, and then writes the host's uptime to
// cordon-oci-test-supervisor-ready there (TestOCINetworkSlowSupervisor).
func init() {
	supervisorTestHook = func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		dir := filepath.Dir(exe)
		b, err := os.ReadFile(filepath.Join(dir, "cordon-oci-test-supervisor-delay"))
		if err != nil {
			return
		}
		if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
			time.Sleep(d)
		}
		if up, err := os.ReadFile("/proc/uptime"); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "cordon-oci-test-supervisor-ready"), up, 0o644)
		}
	}
}
