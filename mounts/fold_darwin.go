package mounts

import "strings"

// foldCase folds case for deny and protect matching: macOS filesystems are
// case-insensitive by default, so a rule must hold for every spelling.
func foldCase(p string) string { return strings.ToLower(p) }
