// Package testenv holds the helpers tests use to decide whether this host
// can run what they exercise. A missing capability skips the test with a
// reason, except under CI=true, where it is a failure.
package testenv

import (
	"os"
	"runtime"
	"testing"

	"github.com/cordon-run/cordon/runner"
)

// CanSandbox reports whether this host can start sandboxes: Linux, as root
// or with unprivileged user namespaces.
func CanSandbox() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	if os.Geteuid() == 0 {
		return true
	}
	for _, c := range runner.Doctor() {
		if c.Name == "user namespaces" && c.OK {
			return true
		}
	}
	return false
}

// RequireSandbox skips t where this host cannot start sandboxes, and fails
// it instead under CI=true.
func RequireSandbox(t testing.TB) {
	t.Helper()
	if CanSandbox() {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs Linux with root or user namespaces to start sandboxes, and CI=true forbids skipping")
	}
	t.Skip("needs Linux with root or user namespaces to start sandboxes")
}

// RequireRoot skips t when not root. Under CI=true it fails instead,
// except in the deliberately rootless pass (CORDON_ROOTLESS=1), whose
// tests check the fail-closed behaviour instead.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" && os.Getenv("CORDON_ROOTLESS") != "1" {
		t.Fatal("needs root, and CI=true forbids skipping")
	}
	t.Skip("needs root (host submounts or cgroup limits); the root pass of `make test` covers it")
}
