//go:build !unix

package gitid

// errUnsupported: where the caller's own directory cannot be checked, no
// identity is carried.
var errUnsupported = ErrIdentity

func ownedDir(string) error { return errUnsupported }

func readNoFollow(string) ([]byte, error) { return nil, errUnsupported }
