// Package testenv holds the helpers tests use to decide whether this host
// can run what they exercise. A missing capability skips the test with a
// reason, except under CI=true, where it is a failure.
package testenv

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// CanSandbox reports whether this host can start sandboxes: Linux, as root
// or with unprivileged user namespaces, in a binary built with seccomp
// support (without it every run fails closed).
func CanSandbox() bool { return sandboxProblem() == "" }

// sandboxProblem says why sandboxes cannot start here, or "" when they can.
var sandboxProblem = sync.OnceValue(func() string {
	if runtime.GOOS != "linux" {
		return "needs Linux to start sandboxes"
	}
	userns := os.Geteuid() == 0 || userNamespaces()
	switch {
	case !userns:
		return "needs root or unprivileged user namespaces to start sandboxes"
	case !seccompBuilt:
		return "needs a test binary that links libseccomp (cgo, without -tags noseccomp): without it every sandbox fails closed"
	}
	return ""
})

// userNamespaces reads the two sysctls that turn unprivileged user
// namespaces off. testenv is a leaf below the backend, so it reads them
// itself rather than asking runner/linux's doctor;
// TestTestenvAgreesWithDoctor (in runner/linux) holds the two answers
// together.
func userNamespaces() bool {
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil {
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n == 0 {
			return false
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return false
	}
	return true
}

// RequireSandbox skips t where this host cannot start sandboxes, and fails
// it instead under CI=true. Under -short it skips t too: a sandbox takes a
// fraction of a second to seconds to start, and `go test -short ./...` is
// the quick loop of unit tests.
func RequireSandbox(t testing.TB) {
	t.Helper()
	SkipIfShort(t, "starts sandboxes")
	why := sandboxProblem()
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(why + ", and CI=true forbids skipping")
	}
	t.Skip(why)
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

// SkipIfShort skips t under -short, saying what it does that the quick
// loop leaves out and which lane runs it.
func SkipIfShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + what + "; go test ./... (make unit) runs it")
	}
}
