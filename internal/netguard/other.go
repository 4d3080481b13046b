//go:build !linux

package netguard

import "errors"

// ErrUnsupported: the guard needs a Linux network namespace and tun device.
var ErrUnsupported = errors.New("netguard: transparent network enforcement needs Linux")
