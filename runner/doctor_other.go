//go:build !linux

package runner

// Doctor reports what this host can enforce. Off Linux this package has no
// backend; see package darwin for macOS.
func Doctor() []Capability {
	return []Capability{{Name: "libcontainer backend", OK: false, Detail: ErrUnsupported.Error()}}
}
