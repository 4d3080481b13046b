//go:build linux && cgo

package awake

/*
#cgo CFLAGS: -Wall -Wextra
#include "awake_linux.h"
*/
import "C"

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futexWakePrivate is FUTEX_WAKE | FUTEX_PRIVATE_FLAG (linux/futex.h).
const futexWakePrivate = 1 | 128

var (
	once    sync.Once
	enabled atomic.Bool
	seq     *uint64
	spins   *uint64
	state   *int32
)

// Start starts the process's keeper thread, once, if this host can use
// it (two CPUs or more in this thread's affinity mask, CORDON_KEEP_AWAKE
// not "0"), and reports whether a keeper runs. Later calls only report.
func Start() bool {
	once.Do(func() {
		if os.Getenv("CORDON_KEEP_AWAKE") == "0" {
			return
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) != nil || set.Count() < 2 {
			return
		}
		sh := C.awake_shared()
		seq = (*uint64)(unsafe.Pointer(&sh.seq))
		spins = (*uint64)(unsafe.Pointer(&sh.spins))
		state = (*int32)(unsafe.Pointer(&sh.state))
		if C.awake_start(C.int64_t(Window.Nanoseconds())) != 0 {
			return
		}
		enabled.Store(true)
	})
	return enabled.Load()
}

// Poke tells the keeper that a hand-off to another thread is under way:
// it spins until a Window passes with no Poke. Cheap when it spins
// already (one atomic add and one load); otherwise it wakes the keeper.
func Poke() {
	if !enabled.Load() {
		return
	}
	atomic.AddUint64(seq, 1)
	if atomic.LoadInt32(state) == C.AWAKE_PARKED && atomic.CompareAndSwapInt32(state, C.AWAKE_PARKED, C.AWAKE_SPINNING) {
		unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(state)), futexWakePrivate, 1, 0, 0, 0)
	}
}

// Spins reports how many times the keeper has stopped spinning and gone
// to sleep: 0 when no keeper runs.
func Spins() uint64 {
	if !enabled.Load() {
		return 0
	}
	return atomic.LoadUint64(spins)
}
