//go:build !unix

package decide

// FD is a Dir on a directory descriptor, which this platform does not
// have: every method returns ErrUnsupported. Nothing writes through it
// here (the file tools' writes are unsupported too).
type FD struct {
	// Dirfd is unused here.
	Dirfd int
	// Up is unused here.
	Up func() (Dir, error)
}

// Lstat implements Dir.
func (FD) Lstat(string) (Entry, error) { return Entry{}, ErrUnsupported }

// Names implements Dir.
func (FD) Names(string) ([]string, error) { return nil, ErrUnsupported }

// ReadFile implements Dir.
func (FD) ReadFile(string, int64) ([]byte, uint32, error) { return nil, 0, ErrUnsupported }

// Parent implements Dir.
func (FD) Parent() (Dir, error) { return nil, ErrUnsupported }
