//go:build !darwin

package darwin

import "github.com/cordon-run/cordon/runner"

// New returns ErrUnsupported: Seatbelt exists only on macOS. Profile and
// Unsupported work everywhere.
func New() (runner.Runner, error) { return nil, ErrUnsupported }
