//go:build !linux && !darwin

package cordon

import (
	"os"

	"github.com/cordon-run/cordon/runner"
)

// RawTerminal returns runner.ErrUnsupported: this OS has no backend that
// runs commands.
func RawTerminal(f *os.File) (restore func() error, typeAhead []byte, err error) {
	return nil, nil, runner.ErrUnsupported
}
