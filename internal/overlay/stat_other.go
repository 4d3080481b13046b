//go:build !linux

package overlay

import "syscall"

func ctime(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }

func opaque(string) bool { return false }
