//go:build linux && cgo

package netguard

import "C"
