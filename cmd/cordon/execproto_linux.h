// The exec protocol on a session socket, as `cordon exec`'s C client
// (execclient_linux.c, at the ELF entry point) speaks it; the server and
// the Go client are internal/session/proto_linux.go. Defined here once for
// the C: the Go constants and offsets are checked against this header when
// cmd/cordon builds (execproto_cgo_linux.go), so a change on one side that
// the other does not make does not compile, and execwire_linux_amd64_test.go
// decodes with Go what the C encodes, and the other way.
//
// Nothing here may need the C library: the C client includes it at the
// ELF entry point, where none of it is set up.

#ifndef CORDON_EXECPROTO_H
#define CORDON_EXECPROTO_H

#include <stddef.h>
#include <stdint.h>

#define EXEC_REQ_MAGIC 0x43445243u   // "CRDC"
#define EXEC_RESP_MAGIC 0x52445243u  // "CRDR"
#define EXEC_SIG_MAGIC 0x47535243u   // "CRSG"
#define EXEC_WINCH_MAGIC 0x4e495743u // "CWIN"
#define EXEC_PROTO_VERSION 1
#define EXEC_REQ_EXEC 1
#define EXEC_REQ_STOP 2
#define EXEC_MAX_PAYLOAD (8u << 20)
#define EXEC_MAX_RESPONSE (16u << 20)

#include "../../internal/exitcodes/exitcodes.h"

// cordon's exit codes a client reports itself: a bad flag or name, and a
// session it cannot reach (session_gone, CORDON_EXIT_SETUP) or another
// set-up failure.
#define CORDON_EXIT_CONFIG 2
#define CORDON_STR(x) #x
#define CORDON_XSTR(x) CORDON_STR(x)

// A request: this header, then its payload of NUL-terminated strings
// (nopts "key=value" options, argv, env). An exec request carries the
// client's fds 0, 1 and 2 (SCM_RIGHTS) on its first byte. The clients
// write it as eight uint32 words.
struct cordon_exec_req {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t nopts;
	uint32_t nargv;
	uint32_t nenv;
	uint32_t len;
	uint32_t pad[2];
};

// The server's answer: this header, a message for the client's stderr
// (msg_len bytes), then the JSON report (report_len bytes). The clients
// read it as six uint32 words.
struct cordon_exec_resp {
	uint32_t magic;
	uint32_t version;
	int32_t code;
	uint32_t msg_len;
	uint32_t report_len;
	uint32_t pad;
};

// A frame the client sends while the exec runs: EXEC_SIG_MAGIC and a
// signal number, or EXEC_WINCH_MAGIC and the terminal's cols<<16 | rows.
struct cordon_exec_frame {
	uint32_t magic;
	uint32_t value;
};

_Static_assert(sizeof(struct cordon_exec_req) == 8 * 4, "request header: eight words");
_Static_assert(offsetof(struct cordon_exec_req, nopts) == 2 * 4 && offsetof(struct cordon_exec_req, len) == 5 * 4,
	       "request header words");
_Static_assert(sizeof(struct cordon_exec_resp) == 6 * 4, "response header: six words");
_Static_assert(offsetof(struct cordon_exec_resp, code) == 2 * 4 && offsetof(struct cordon_exec_resp, msg_len) == 3 * 4 &&
		       offsetof(struct cordon_exec_resp, report_len) == 4 * 4,
	       "response header words");
_Static_assert(sizeof(struct cordon_exec_frame) == 8, "frame");

// Why a client refuses a session's server, in its session_gone message
// (internal/session/peer_linux.go gives the same reasons).
#define EXEC_WHY_NO_CRED "its server's credentials cannot be read"
#define EXEC_WHY_OTHER_UID "its socket is served by another user"
#define EXEC_WHY_NO_INFO "its info.json has no supervisor pid"
#define EXEC_WHY_NOT_SUPERVISOR "its socket is not served by its supervisor"
#define EXEC_WHY_IN_SANDBOX "its socket is served from inside a sandbox, not by its supervisor"

// cordon_exec_server_ok returns 0 when the peer of the connected socket
// sock is the supervisor of the session whose directory is sessdir: the
// same uid, the pid its info.json records, and a process of this PID
// namespace (not one inside a sandbox). Otherwise it returns -1 and, when
// why is not NULL, puts the reason there (NUL-terminated, at most whyn).
int cordon_exec_server_ok(int sock, const char *sessdir, char *why, size_t whyn);

// cordon_invoked_as_oci reports whether argv0's last component is
// "cordon-oci": then "exec" is runc's (internal/ociruntime), not cordon's.
// It uses no C library function: the fast client runs before libc starts.
static inline int cordon_invoked_as_oci(const char *argv0)
{
	const char *base = argv0, *want = "cordon-oci";
	for (const char *p = argv0; p && *p; p++)
		if (*p == '/')
			base = p + 1;
	if (!base)
		return 0;
	while (*want && *base == *want)
		base++, want++;
	return !*want && !*base;
}

#endif
