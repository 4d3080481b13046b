package linux_test

import (
	"os"
	"testing"

	"github.com/cordon-run/cordon/internal/testenv"
	runnerlinux "github.com/cordon-run/cordon/runner/linux"
)

// TestTestenvAgreesWithDoctor: testenv, a leaf below the backend, decides
// on its own whether tests can start sandboxes here; it must say what the
// doctor says of user namespaces and seccomp, or tests would skip what
// runs, or fail where nothing can.
func TestTestenvAgreesWithDoctor(t *testing.T) {
	userns, seccomp := os.Geteuid() == 0, false
	for _, c := range runnerlinux.Doctor() {
		switch c.Name {
		case "user namespaces":
			userns = userns || c.OK
		case "seccomp":
			seccomp = c.OK
		}
	}
	if got, want := testenv.CanSandbox(), userns && seccomp; got != want {
		t.Fatalf("testenv.CanSandbox() = %v; the doctor says user namespaces %v and seccomp %v", got, userns, seccomp)
	}
}
