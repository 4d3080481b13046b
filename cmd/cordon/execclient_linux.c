//go:build linux && cgo

// `cordon exec`'s C client. It runs at the binary's ELF entry point, before
// the C library starts (and so long before the Go runtime): a harness
// starts the client for every command, and on this kind of host most of a
// glibc process's start is its CPU feature probing (cpuid, which traps to
// the hypervisor), and a Go start costs more than the exec itself.
//
// It serves `cordon exec NAME [--cwd DIR] [--timeout D] [--memory SIZE]
// [--detach] [--report FILE] [--json] [--sandbox] [--] CMD...` with fds
// 0-2 open and no terminal on both stdin and stdout. Everything else it
// leaves, before it has changed anything (a socket or report it opened is
// closed again), to the C library's start and so to the Go client
// (execclient.go): -h, another flag, a refused command line, a terminal, a
// report it cannot open, a missing or stopped session or a refused server,
// a request too large for its buffer. The Go client then says exactly what
// it always says. Once the request is sent, this client finishes the exec
// itself, with the same messages and exit codes as the Go client.
//
// Files: this one (the command line, the request, the exchange, the entry
// point), execserver_linux.c (finding the socket, checking its server),
// execreport_linux.c (--report); execsys_linux.h has the libc-free
// primitives all three use. On other architectures than amd64 the entry
// point is glibc's own and the Go client serves every exec.

#define _GNU_SOURCE
#include "execsys_linux.h"

#if defined(__x86_64__)

#include <signal.h>
#include <sys/socket.h>

#include "execclient_linux.h"
#include "execproto_linux.h"

char cx_buf[256 << 10]; // in .bss: only what is written is paged in
size_t cx_len;

static volatile int cx_sock = -1;

static int valid_name(const char *s)
{
	size_t n = xlen(s);
	if (n < 1 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && !(i > 0 && (c == '.' || c == '_' || c == '-')))
			return 0;
	}
	return 1;
}

int cx_parse(int argc, char **argv, struct cx_flags *f)
{
	xzero(f, sizeof(*f));
	f->first = -1;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (xeq(a, "--")) {
			f->first = i + 1;
			break;
		}
		if (a[0] != '-') {
			if (!f->name) {
				f->name = a;
				continue;
			}
			f->first = i; // the command, without "--"
			break;
		}
		const char *fl = a[1] == '-' ? a + 2 : a + 1;
		int *on = xeq(fl, "detach") ? &f->detach : xeq(fl, "json") ? &f->json : xeq(fl, "sandbox") ? &f->sandbox : NULL;
		if (on) {
			*on = 1;
			continue;
		}
		const char *v;
		const char **dst = (v = xprefix(fl, "timeout"))  ? &f->timeout
				   : (v = xprefix(fl, "cwd"))    ? &f->cwd
				   : (v = xprefix(fl, "memory")) ? &f->memory
				   : (v = xprefix(fl, "report")) ? &f->report
								 : NULL;
		if (!dst)
			return -1; // -h, an unknown flag
		if (*v == '=')
			*dst = v + 1;
		else if (*v == 0 && i + 1 < argc)
			*dst = argv[++i];
		else
			return -1;
	}
	if (!f->name || !valid_name(f->name) || f->first < 0 || f->first >= argc || !argv[f->first][0])
		return -1;
	return 0;
}

static int put(const char *a, const char *b)
{
	size_t la = xlen(a), lb = b ? xlen(b) : 0;
	if (cx_len + la + lb + 1 > sizeof(cx_buf))
		return -1;
	xcopy(cx_buf + cx_len, a, la);
	xcopy(cx_buf + cx_len + la, b, lb);
	cx_len += la + lb;
	cx_buf[cx_len++] = 0;
	return 0;
}

// put_opt adds option key (as "key=") with value v when v is set, counting
// it in *n.
static int put_opt(const char *key, const char *v, uint32_t *n)
{
	if (!v)
		return 0;
	(*n)++;
	return put(key, v);
}

int cx_request(int argc, char **argv, char **envp, const struct cx_flags *f)
{
	uint32_t nopts = 0, nargv = 0, nenv = 0;
	char wd[4096];
	cx_len = sizeof(struct cordon_exec_req);
	if (f->cwd && xlen(f->cwd) > 4096)
		return -1; // the Go client refuses it
	// Like cordon run: without --cwd the command runs in this directory
	// when the sandbox shows it; the supervisor decides.
	const char *here = !f->cwd && xsys(SYS_getcwd, (long)wd, sizeof(wd), 0, 0, 0) > 0 && wd[0] == '/' ? wd : NULL;
	if (put_opt("timeout=", f->timeout, &nopts) < 0 || put_opt("memory=", f->memory, &nopts) < 0 ||
	    put_opt("cwd=", f->cwd, &nopts) < 0 || put_opt("wd=", here, &nopts) < 0 ||
	    put_opt("detach=1", f->detach ? "" : NULL, &nopts) < 0 ||
	    put_opt("report=1", f->report || f->json ? "" : NULL, &nopts) < 0 ||
	    put_opt("sandbox=1", f->sandbox ? "" : NULL, &nopts) < 0)
		return -1;
	for (int i = f->first; i < argc; i++, nargv++)
		if (put(argv[i], NULL) < 0)
			return -1;
	for (char **e = envp; *e; e++, nenv++)
		if (put(*e, NULL) < 0)
			return -1;
	struct cordon_exec_req h;
	xzero(&h, sizeof(h));
	h.magic = EXEC_REQ_MAGIC;
	h.version = EXEC_PROTO_VERSION;
	h.type = EXEC_REQ_EXEC;
	h.nopts = nopts;
	h.nargv = nargv;
	h.nenv = nenv;
	h.len = (uint32_t)(cx_len - sizeof(h));
	xcopy(cx_buf, (const char *)&h, sizeof(h));
	return 0;
}

int cx_reply_ok(const uint32_t rh[6])
{
	const struct cordon_exec_resp *r = (const void *)rh;
	return r->magic == EXEC_RESP_MAGIC && r->version == EXEC_PROTO_VERSION && (uint32_t)r->code <= 255 &&
	       r->msg_len <= EXEC_MAX_RESPONSE && r->report_len <= EXEC_MAX_RESPONSE - r->msg_len;
}

// send_request sends the request with fds 0, 1 and 2 on its first byte.
static int send_request(int s)
{
	int fds[3] = {0, 1, 2};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} c;
	xzero(&c, sizeof(c));
	struct iovec iov = {.iov_base = cx_buf, .iov_len = cx_len};
	struct msghdr m;
	xzero(&m, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = c.buf;
	m.msg_controllen = sizeof(c.buf);
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(fds));
	xcopy((char *)CMSG_DATA(h), (const char *)fds, sizeof(fds));
	size_t sent = 0;
	while (sent < cx_len) {
		long w = xsys(SYS_sendmsg, s, (long)&m, MSG_NOSIGNAL, 0, 0);
		if (w == -X_EINTR)
			continue;
		if (w < 0)
			return -1;
		sent += (size_t)w;
		iov.iov_base = cx_buf + sent;
		iov.iov_len = cx_len - sent;
		m.msg_control = NULL;
		m.msg_controllen = 0;
	}
	return 0;
}

// reply reads the response, prints its message, writes the report and
// exits with its code; a malformed one is refused as the Go client refuses
// it.
static void __attribute__((noreturn)) reply(int s, const char *name)
{
	uint32_t rh[6];
	if (xread_full(s, rh, sizeof(rh)) < 0)
		cx_gone(name, "it ended while the command ran");
	if (!cx_reply_ok(rh))
		cx_gone(name, "its reply was malformed");
	size_t n = (size_t)rh[3] + rh[4];
	char *body = cx_buf;
	if (n > sizeof(cx_buf)) {
		long p = xsys6(SYS_mmap, 0, (long)n, 3 /* PROT_READ|PROT_WRITE */, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, -1, 0);
		if (p < 0 && p > -4096)
			cx_gone(name, "its reply does not fit in memory");
		body = (char *)p;
	}
	if (xread_full(s, body, n) < 0)
		cx_gone(name, "it ended while the command ran");
	(void)xwrite_all(2, body, rh[3]);
	if (rh[4] > 0) {
		if (cx_json)
			(void)xwrite_all(2, body + rh[3], rh[4]);
		long e = cx_write_report(body + rh[3], rh[4]);
		if (e < 0) {
			char why[64];
			cx_strerror((int)-e, why, sizeof(why));
			xputs2("cordon: the report ");
			xputs2(cx_report_path);
			xputs2(" was replaced or moved while the command ran and cannot be written again (");
			xputs2(why);
			xputs2("); give --report a path outside the folders the session can write\n");
			xsys(SYS_exit_group, CORDON_EXIT_SETUP, 0, 0, 0, 0);
		}
	}
	xsys(SYS_exit_group, (long)rh[2], 0, 0, 0, 0);
	__builtin_unreachable();
}

static void forward(int sig)
{
	uint32_t frame[2] = {EXEC_SIG_MAGIC, (uint32_t)sig};
	if (cx_sock >= 0)
		xsys(SYS_write, cx_sock, (long)frame, sizeof(frame), 0, 0);
}

void cordon_exec_restorer(void);
__asm__(".text\n"
	".type cordon_exec_restorer,@function\n"
	"cordon_exec_restorer:\n"
	"\tmov $15, %eax\n" // rt_sigreturn
	"\tsyscall\n"
	".size cordon_exec_restorer, .-cordon_exec_restorer\n");

// The kernel's struct sigaction on amd64.
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#define X_SA_RESTORER 0x04000000

// usable reports whether the exec is this client's: fds 0-2 open, and not
// a terminal on both 0 and 1 (a TTY exec: the Go client).
static int usable(void)
{
	char tio[64];
	for (int fd = 0; fd < 3; fd++)
		if (xsys(SYS_fcntl, fd, 1 /* F_GETFD */, 0, 0, 0) < 0)
			return 0;
	return xsys(SYS_ioctl, 0, 0x5401 /* TCGETS */, (long)tio, 0, 0) < 0 || xsys(SYS_ioctl, 1, 0x5401, (long)tio, 0, 0) < 0;
}

// cordon_exec runs at the entry point with the initial stack (argc, argv,
// NULL, envp, NULL, auxv); it returns when the C library's start (and the
// Go client) is to take over, and otherwise exits.
__attribute__((no_stack_protector, noinline)) void cordon_exec(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1), **envp = argv + argc + 1;
	struct cx_flags f;
	if (argc < 3 || !xeq(argv[1], "exec") || cordon_invoked_as_oci(argv[0]) || cx_parse(argc, argv, &f) < 0 || !usable() ||
	    cx_request(argc, argv, envp, &f) < 0)
		return;
	cx_json = f.json;
	cx_report_path = f.report;
	if (f.report) {
		long fd = cx_open_report(f.report);
		if (fd < 0)
			return; // the Go client refuses it, with the reason
		cx_report_fd = (int)fd;
	}
	int s = cx_connect(f.name, envp);
	if (s < 0) {
		if (cx_report_fd >= 0)
			xclose(cx_report_fd);
		cx_report_fd = -1;
		return;
	}

	// The forwarders are in place before the request leaves, with the
	// signals held until it is sent (a frame must not land inside the
	// request): a signal that arrives once the command may run is never
	// the default action on this client.
	uint64_t fwd = 1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1) | 1ull << (SIGHUP - 1) | 1ull << (SIGQUIT - 1), old = 0;
	xsys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&fwd, (long)&old, 8, 0);
	struct ksigaction sa = {forward, X_SA_RESTORER, cordon_exec_restorer, 0};
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (int i = 0; i < 4; i++)
		xsys(SYS_rt_sigaction, sigs[i], (long)&sa, 0, 8, 0);
	cx_sock = s;
	if (send_request(s) < 0)
		cx_gone(f.name, "it hung up");
	struct ksigaction ign = {SIG_IGN, X_SA_RESTORER, cordon_exec_restorer, 0};
	xsys(SYS_rt_sigaction, SIGPIPE, (long)&ign, 0, 8, 0);
	xsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0);
	reply(s, f.name);
}

// cordonentry is the binary's ELF entry point (execproto_cgo_linux.go
// links it with -e): it hands the initial stack to cordon_exec and, when
// that returns, jumps to glibc's _start with the registers the kernel (or
// the dynamic loader: rdx, its finalizer) gave it.
__asm__(".text\n"
	".globl cordonentry\n"
	".type cordonentry,@function\n"
	"cordonentry:\n"
	"\tendbr64\n"
	"\tmov %rdx, %r12\n"
	"\tmov %rsp, %rdi\n"
	"\tcall cordon_exec\n"
	"\tmov %r12, %rdx\n"
	"\tjmp _start\n"
	".size cordonentry, .-cordonentry\n");

#endif
