//go:build !linux

package sessiond

import "time"

// Dir is the directory of named sessions; off Linux there is none.
type Dir struct{}

// OpenDir returns ErrUnsupported off Linux.
func OpenDir(string) (*Dir, error) { return nil, ErrUnsupported }

// CheckName returns ErrUnsupported off Linux.
func CheckName(string) error { return ErrUnsupported }

// Stop returns ErrUnsupported off Linux.
func (d *Dir) Stop(string) error { return ErrUnsupported }

// Ps returns ErrUnsupported off Linux.
func (d *Dir) Ps(string) (string, error) { return "", ErrUnsupported }

// Kill returns ErrUnsupported off Linux.
func (d *Dir) Kill(string, string) error { return ErrUnsupported }

// Info describes a running named session.
type Info struct {
	Name    string
	PID     int
	Started time.Time
	Root    string
	Config  string
}

// List returns ErrUnsupported off Linux.
func (d *Dir) List() ([]Info, error) { return nil, ErrUnsupported }
