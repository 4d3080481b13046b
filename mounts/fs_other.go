//go:build !unix

package mounts

import "os"

// The file tools need openat and O_NOFOLLOW; without them they refuse rather
// than open files by path.

func openRead(resolution) (*os.File, int64, error) { return nil, 0, ErrUnsupported }

func (t *Table) writeAtomic(resolution, string) error { return ErrUnsupported }

func (t *Table) listWalk(*lister, resolution) error { return ErrUnsupported }

// CheckWrite is Check for a write; the writes themselves are unsupported
// here.
func (t *Table) CheckWrite(path string) error {
	if err := t.Check(path, true); err != nil {
		return err
	}
	return ErrUnsupported
}
