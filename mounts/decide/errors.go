package decide

import (
	"errors"
	"io/fs"
)

// ErrUnsupported is returned by FD on a platform without directory
// descriptors.
var ErrUnsupported = errors.New("decide: directory descriptors are not supported on this platform")

const dirType = fs.ModeDir

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
