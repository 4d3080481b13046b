//go:build linux && cgo

// The process attributes a command inherits from its shim (resource
// limits, nice value, CPU affinity, scheduling policy and attributes, I/O
// priority), recorded once in the session's PID 1 and put back in PID 1
// and in each shim before every exec (see sessioninit_linux.c).

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sessionshim_linux.h"

// attrs are the process attributes a command inherits from its shim, as
// PID 1 had them before any exec ran (si_attrs_save); the shims get a copy
// when they fork from it.
struct cordon_sched_attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

static struct {
	struct rlimit lim[RLIM_NLIMITS];
	int nice;
	cpu_set_t cpus;
	int policy;
	struct sched_param sp;
	long ioprio;
	// sched_getattr's whole record (the EEVDF slice a command can set
	// with sched_setattr, too), when the kernel and the filter allow it.
	struct cordon_sched_attr sa;
	int have_sa;
} attrs;

static int get_sched_attr(struct cordon_sched_attr *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, 0, a, sizeof(*a), 0);
}

void si_attrs_save(void)
{
	for (int r = 0; r < RLIM_NLIMITS; r++)
		getrlimit(r, &attrs.lim[r]);
	attrs.nice = getpriority(PRIO_PROCESS, 0);
	sched_getaffinity(0, sizeof(attrs.cpus), &attrs.cpus);
	attrs.policy = sched_getscheduler(0);
	sched_getparam(0, &attrs.sp);
	attrs.ioprio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
	attrs.have_sa = get_sched_attr(&attrs.sa) == 0;
}

// si_attrs_restore puts the shim's inherited attributes back as attrs has
// them, before each exec. A command (same uid as PID 1 and the shims) can
// lower their resource limits (prlimit --pid), raise their nice value
// (setpriority, PRIO_USER too), narrow their CPU affinity, or change their
// scheduling policy or I/O priority; without this the commands after it
// would inherit that silently (a lowered RLIMIT_FSIZE truncates their
// files). What an unprivileged process cannot undo (a lowered hard limit,
// a raised nice value) fails: it returns that errno, 0 when all is back.
int si_attrs_restore(void)
{
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit cur;
		if (getrlimit(r, &cur) < 0)
			return errno;
		if ((cur.rlim_cur != attrs.lim[r].rlim_cur || cur.rlim_max != attrs.lim[r].rlim_max) &&
		    setrlimit(r, &attrs.lim[r]) < 0)
			return errno;
	}
	errno = 0;
	int n = getpriority(PRIO_PROCESS, 0);
	if (errno)
		return errno;
	if (n != attrs.nice && setpriority(PRIO_PROCESS, 0, attrs.nice) < 0)
		return errno;
	// SCHED_RESET_ON_FORK, which a command may set on a shim but only
	// privilege clears, resets a negative nice value and a real-time
	// policy in the children: for a shim of the normal policy at nice 0
	// or above it changes nothing, so it is ignored there, and kept when
	// a restore is due; elsewhere it cannot be put back, which fails.
	struct sched_param sp;
	int pol = sched_getscheduler(0);
	int harmless = attrs.nice >= 0 && (attrs.policy & ~SCHED_RESET_ON_FORK) == SCHED_OTHER;
	int mask = harmless ? ~SCHED_RESET_ON_FORK : ~0;
	int keep = pol >= 0 && harmless ? (pol & SCHED_RESET_ON_FORK) : 0;
	if (pol < 0 || (pol & mask) != (attrs.policy & mask) || sched_getparam(0, &sp) < 0 ||
	    sp.sched_priority != attrs.sp.sched_priority) {
		if (sched_setscheduler(0, attrs.policy | keep, &attrs.sp) < 0)
			return errno;
	}
	cpu_set_t cpus;
	if (sched_getaffinity(0, sizeof(cpus), &cpus) < 0)
		return errno;
	if (!CPU_EQUAL(&cpus, &attrs.cpus) && sched_setaffinity(0, sizeof(attrs.cpus), &attrs.cpus) < 0)
		return errno;
	if (syscall(SYS_ioprio_get, 1, 0) != attrs.ioprio && attrs.ioprio >= 0 &&
	    syscall(SYS_ioprio_set, 1, 0, attrs.ioprio) < 0)
		return errno;
	struct cordon_sched_attr sa;
	const uint64_t clamps = 0x20 | 0x40; // SCHED_FLAG_UTIL_CLAMP_MIN|MAX
	const uint64_t reset = harmless ? 0x01 : 0; // SCHED_FLAG_RESET_ON_FORK, when ignored
	if (attrs.have_sa && (get_sched_attr(&sa) < 0 || sa.policy != attrs.sa.policy ||
			      (sa.flags & ~reset) != (attrs.sa.flags & ~reset) || sa.runtime != attrs.sa.runtime ||
			      sa.deadline != attrs.sa.deadline || sa.period != attrs.sa.period ||
			      sa.util_min != attrs.sa.util_min || sa.util_max != attrs.sa.util_max)) {
		struct cordon_sched_attr want = attrs.sa;
		want.size = sizeof(want);
		want.flags = (attrs.sa.flags & ~reset) | (sa.flags & reset);
		// Only where clamps changed, so kernels without them are not
		// asked to set any.
		if (sa.util_min != attrs.sa.util_min || sa.util_max != attrs.sa.util_max)
			want.flags |= clamps;
		if (syscall(SYS_sched_setattr, 0, &want, 0) < 0)
			return errno;
	}
	return 0;
}
