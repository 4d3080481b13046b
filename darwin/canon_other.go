//go:build !darwin

package darwin

// realPath resolves the symbolic links of an existing path. Off macOS there
// is no Seatbelt to agree with, so the profile shows the links of this host
// resolved, for review.
func realPath(p string) (string, error) { return evalSymlinks(p) }
