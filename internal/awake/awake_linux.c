//go:build linux && cgo

// The keeper thread of package awake (see doc.go): spins while the Go side's
// counter moves, sleeps in a futex when it has not moved for a window.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "awake_linux.h"

// awake_state is shared with Go, which updates it with atomic operations
// (sync/atomic on the addresses awake_shared gives it).
static struct awake_shared awake_state;

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static void *keeper(void *arg)
{
	int64_t window = (int64_t)(intptr_t)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	setpriority(PRIO_PROCESS, 0, 19); // this thread only (Linux)
	for (;;) {
		while (__atomic_load_n(&awake_state.state, __ATOMIC_ACQUIRE) == AWAKE_PARKED)
			syscall(SYS_futex, &awake_state.state, FUTEX_WAIT_PRIVATE, AWAKE_PARKED, NULL, NULL, 0);
		uint64_t seen = __atomic_load_n(&awake_state.seq, __ATOMIC_ACQUIRE);
		int64_t since = now_ns();
		for (;;) {
			for (int i = 0; i < 64; i++)
				relax();
			uint64_t s = __atomic_load_n(&awake_state.seq, __ATOMIC_ACQUIRE);
			int64_t t = now_ns();
			if (s != seen) {
				seen = s;
				since = t;
			} else if (t - since > window) {
				break;
			}
		}
		__atomic_add_fetch(&awake_state.spins, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&awake_state.state, AWAKE_PARKED, __ATOMIC_SEQ_CST);
		// A Poke that saw AWAKE_SPINNING before the store did not wake
		// this thread: look at the counter once more.
		if (__atomic_load_n(&awake_state.seq, __ATOMIC_SEQ_CST) != seen) {
			int32_t parked = AWAKE_PARKED;
			__atomic_compare_exchange_n(&awake_state.state, &parked, AWAKE_SPINNING, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

struct awake_shared *awake_shared(void)
{
	return &awake_state;
}

int awake_start(int64_t window_ns)
{
	pthread_attr_t a;
	pthread_t t;
	int err = pthread_attr_init(&a);
	if (err != 0)
		return err;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	awake_state.state = AWAKE_PARKED;
	err = pthread_create(&t, &a, keeper, (void *)(intptr_t)window_ns);
	pthread_attr_destroy(&a);
	return err;
}
