package cordon

import (
	"github.com/cordon-run/cordon/darwin"
	"github.com/cordon-run/cordon/runner"
)

// newBackend returns the Seatbelt backend.
func newBackend() (runner.Runner, error) { return darwin.New() }
