//go:build !linux

package runner

// probeDelegation: there are no cgroups off Linux.
func probeDelegation() delegation {
	return delegation{Problem: "this OS has no cgroups"}
}
