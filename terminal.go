//go:build linux || darwin

package cordon

import (
	"os"

	"github.com/cordon-run/cordon/runner"
)

// RawTerminal puts the caller's terminal f in raw mode for a Terminal run
// or exec (runner.MakeRaw): the command's own terminal then does the line
// editing, echo and output processing. It returns what restores f, and
// the input f already held, which the run takes with TypeAhead.
func RawTerminal(f *os.File) (restore func() error, typeAhead []byte, err error) {
	return runner.MakeRaw(f)
}
