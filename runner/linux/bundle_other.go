//go:build !linux

package linux

import (
	"github.com/cordon-run/cordon/runner"
	"github.com/cordon-run/cordon/spec"
)

// Bundle is what WriteBundle wrote.
type Bundle struct {
	Dir          string
	Placeholders []string
	OnlyCordon   []string
}

// WriteBundle returns ErrUnsupported: OCI bundles are for Linux runtimes.
func WriteBundle(string, *spec.Sandbox, []string) (*Bundle, error) { return nil, runner.ErrUnsupported }
