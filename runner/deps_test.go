package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// TestContractLinksNoBackend: the contract, and the packages that import
// only it, link neither libcontainer nor the network guard's TCP/IP stack:
// those are the Linux backend's (runner/linux), which only the root
// package imports.
func TestContractLinksNoBackend(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to list dependencies:", err)
	}
	for _, pkg := range []string{".", "../internal/audit"} {
		for _, goos := range []string{"linux", "darwin"} {
			cmd := exec.Command(goBin, "list", "-deps", pkg)
			cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps %s (GOOS=%s): %v", pkg, goos, err)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, banned := range []string{"github.com/opencontainers/runc", "github.com/opencontainers/cgroups", "gvisor.dev/gvisor", "github.com/cordon-run/cordon/runner/linux"} {
					if dep == banned || strings.HasPrefix(dep, banned+"/") {
						t.Errorf("%s (GOOS=%s) links %s: the contract must not depend on a backend", pkg, goos, dep)
					}
				}
			}
		}
	}
}
