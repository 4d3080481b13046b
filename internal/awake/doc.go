// Package awake keeps one CPU from going idle while threads of this process
// hand work to threads of another at a high rate.
//
// A seccomp user-notification round trip, a pipe's or a socket's reply wakes
// a thread that sleeps. When the scheduler wakes it on an idle CPU, and that
// CPU has halted, the wake-up costs the hardware's exit from the idle state:
// on a virtual machine whose guest does not poll before it halts
// (/sys/module/haltpoll/parameters/guest_halt_poll_ns is 0 on the hosts
// cordon is measured on), a halted vCPU is a host thread that has to be
// scheduled again, tens of microseconds each time, where the hand-off itself
// costs a few. The scheduler prefers an idle CPU to the waker's, so a
// broker's install of a descriptor (SECCOMP_IOCTL_NOTIF_ADDFD, which wakes
// the caller and then waits for it) crossed CPUs twice per call: 85 µs a
// call against 4 µs for an answer the kernel hands over on the same CPU
// (hack/bench.d/notifyfloor with the listener installing a descriptor).
//
// The keeper spins on one thread, at the lowest priority (nice 19), while
// Poke is called at least once a Window, and sleeps in the kernel
// otherwise: a busy CPU is not an idle one, so the woken thread stays on
// the waker's CPU, as when both are pinned to one. It is user space's
// version of the guest's halt polling, bounded the same way: it spins only
// during a burst of calls and a window after the last one, and any other
// runnable thread takes its CPU first. Its thread is a C thread unknown to
// the Go runtime (it holds no P, so it delays no goroutine), started once
// per process, sleeping in a futex when there is nothing to keep awake.
//
// On fewer than two usable CPUs, without cgo, or when
// CORDON_KEEP_AWAKE=0 is set in the environment, Start starts nothing and
// Poke does nothing.
package awake
