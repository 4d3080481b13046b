package runner

import "unsafe"

// unsafePointer converts a pointer for a raw system call argument.
func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }
