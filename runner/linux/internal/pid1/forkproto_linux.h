// The wire format between the session supervisor (Go, sessionproto_linux.go)
// and cordon's PID 1 for a warm session, the fork server, and its shims
// (sessioninit_linux.c). It is defined here once: the C includes this
// header and the Go reads the same names through cgo
// (sessionproto_cgo_linux.go checks every Go constant and offset against
// them when the package builds).

#ifndef CORDON_FORKPROTO_H
#define CORDON_FORKPROTO_H

#include <stdint.h>

// The argument that makes the binary the fork server, and the fd of its end
// of the control socket.
#define CORDON_SESSION_ARG "cordon-session-init"
#define CTRL_FD 3
// The bytes PID 1 writes on the control socket: ready, or about to exit
// with its reason on stderr.
#define CTRL_READY 'R'
#define CTRL_ABORT 'A'

#define REQ_MAGIC 0x58445243u	 // "CRDX"
#define STATUS_MAGIC 0x53445243u // "CRDS"
#define PROTO_VERSION 2
#define REQ_EXEC 1
#define REQ_SIGNAL 2
#define REQ_SPARE 3
#define FLAG_DETACH 1u
#define FLAG_TTY 2u
// FLAG_CGROUP: the request carries two more descriptors, the exec's leaf
// cgroup.procs and the shims' home.
#define FLAG_CGROUP 4u
// MAX_FDS is the most descriptors one request carries (a SPARE: one shim
// socket each, so at most MAX_FDS - 1 shims).
#define MAX_FDS 6
#define CORDON_SIG_KILLTREE (-1)
#define PHASE_RAN 0
#define PHASE_CHDIR 1
#define PHASE_EXEC 2
#define PHASE_SHIM 3
// PHASE_ATTRS: the shim could not restore the process attributes its
// command inherits (a command lowered a hard limit or raised the nice
// value of PID 1 or a shim).
#define PHASE_ATTRS 4
#define MAX_PAYLOAD (8u << 20)
// Status flags. STATUS_KILLED is informative only (the supervisor decides
// kills from its own timer); STATUS_AGAIN says the shim waits for another
// exec on the same socket.
#define STATUS_KILLED 1
#define STATUS_AGAIN 2

// A request header, then its payload (EXEC: cwd, argv and env, each
// NUL-terminated).
struct cordon_req {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint64_t id;
	uint32_t flags;
	int32_t sig;
	uint32_t nargv;
	uint32_t nenv;
	uint32_t len;
	uint32_t pad;
};

// What a shim reports about its exec, one record per exec. It comes from
// inside the sandbox: the supervisor checks every field (decodeStatus).
struct cordon_status {
	uint32_t magic;
	uint32_t version;
	int32_t phase;
	int32_t err;
	int32_t wstatus;
	int32_t flags; // STATUS_*
	int64_t utime_us;
	int64_t stime_us;
	int64_t maxrss_kb;
};

_Static_assert(sizeof(struct cordon_req) == 40, "request header layout");
_Static_assert(sizeof(struct cordon_status) == 48, "status layout");

#endif
