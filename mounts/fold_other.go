//go:build !darwin

package mounts

// foldCase leaves paths as they are: Linux filesystems are case-sensitive.
func foldCase(p string) string { return p }
