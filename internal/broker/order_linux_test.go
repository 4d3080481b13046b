package broker

import (
	"slices"
	"testing"
)

// TestSyscallsStableOrder: the runner caches the compiled filter by its
// content, so the list must come out the same on every call (a map's order
// made every run compile its filter again and add a file to the cache).
func TestSyscallsStableOrder(t *testing.T) {
	first := Syscalls()
	if !slices.IsSorted(first) {
		t.Fatalf("Syscalls() = %v, not sorted", first)
	}
	for i := 0; i < 50; i++ {
		if got := Syscalls(); !slices.Equal(got, first) {
			t.Fatalf("Syscalls() changed between calls: %v then %v", first, got)
		}
	}
}
