package gitid

import "errors"

// ErrIdentity is matched by the error of an identity that cannot be
// written into a config (a name or email with a line end or a NUL).
var ErrIdentity = errors.New("gitid: git identity not carried")
