//go:build linux && cgo

// The fast path of `cordon exec`: it runs at the binary's ELF entry point,
// before the C library starts (and so long before the Go runtime), in the
// common case: `cordon exec NAME [--cwd DIR] [--timeout D] [--detach]
// [--report FILE] [--json] -- CMD...` with no terminal on both stdin and
// stdout. A harness starts the client for every command, and on this
// machine most of a glibc process's start is its CPU feature probing
// (cpuid, which traps to the hypervisor): about 0.3 ms that the exec
// itself does not need.
//
// Whatever it does not handle it leaves to the C library's start, and so
// to the full client (execclient_linux.c), before it has changed anything
// (a socket or report it opened is closed again; the full client opens
// the report again, as it would have): another flag, a terminal, a report
// it cannot open, a missing or stopped session, a refused server, a
// request too large for its buffer. The full client then says exactly what it always says. Once
// the request is sent, the fast path finishes the exec itself, with the
// same messages and exit codes as the full client.
//
// The code here uses no C library: at the entry point of a static binary
// nothing of it is set up (no TLS, so no errno and no stack protector, no
// IFUNC-resolved memcpy). Every system call is a raw one, every loop is
// written out, and the compiler is told not to turn loops into memset or
// memcpy calls. On other architectures than amd64 the entry point is
// glibc's own and the full client serves every exec.
//
// cordon_exec_server_ok (the check that the session's socket is served by
// its supervisor) is shared with the full client.

#define _GNU_SOURCE
#pragma GCC optimize("no-tree-loop-distribute-patterns", "no-stack-protector")

#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#if !defined(__x86_64__)
#include <errno.h>
#include <unistd.h>
#endif

#include "execproto_linux.h"


#if defined(__x86_64__)
#define FAST_NOSP __attribute__((no_stack_protector, noinline))
#else
#define FAST_NOSP __attribute__((no_stack_protector))
#endif

// fsys is a raw system call: the result, or -errno.
static inline long fsys6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return ret;
#else
	long r = syscall(n, a, b, c, d, e, f);
	return r < 0 ? -errno : r;
#endif
}

static inline long fsys(long n, long a, long b, long c, long d, long e) { return fsys6(n, a, b, c, d, e, 0); }

static size_t flen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static int feq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

// fprefix returns what follows prefix p in s, or NULL.
static const char *fprefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return NULL;
	return s;
}

static void fcopy(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

static void fzero(void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile char *)p)[i] = 0;
}

// fdec writes v in decimal at b (at least 11 bytes) and returns its length.
static size_t fdec(char *b, uint32_t v)
{
	char t[11];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		b[i] = t[n - 1 - i];
	return n;
}

static int fread_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		long r = fsys(SYS_read, fd, (long)p, (long)n, 0, 0);
		if (r == -4) // EINTR: a forwarded signal
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

// fread_file reads at most n-1 bytes of path (not followed when it is a
// link) and NUL-terminates them; it returns the length or -1.
static long fread_file(const char *path, char *buf, size_t n)
{
	long fd = fsys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return -1;
	size_t got = 0;
	for (;;) {
		long r = fsys(SYS_read, fd, (long)(buf + got), (long)(n - 1 - got), 0, 0);
		if (r == -4)
			continue;
		if (r < 0) {
			fsys(SYS_close, fd, 0, 0, 0, 0);
			return -1;
		}
		if (r == 0 || (got += (size_t)r) == n - 1)
			break;
	}
	fsys(SYS_close, fd, 0, 0, 0, 0);
	buf[got] = 0;
	return (long)got;
}

// ffind returns the first occurrence of needle in the NUL-terminated
// hay, or NULL.
static const char *ffind(const char *hay, const char *needle)
{
	for (; *hay; hay++)
		if (fprefix(hay, needle))
			return hay;
	return NULL;
}

int cordon_exec_server_ok(int sock, const char *sessdir, char *why, size_t whyn)
{
	// The messages, each a reason in the session_gone message.
	static const char no_cred[] = "its server's credentials cannot be read";
	static const char no_info[] = "its info.json has no supervisor pid";
	static const char other_uid[] = "its socket is served by another user";
	static const char not_sup[] = "its socket is not served by its supervisor";
	static const char in_ns[] = "its socket is served from inside a sandbox, not by its supervisor";
	const char *msg = NULL;
	struct ucred cred;
	fzero(&cred, sizeof(cred));
	socklen_t cl = sizeof(cred);
	char path[4200], buf[8192];
	size_t dl = flen(sessdir);
	uint32_t pid = 0;
	const char *p;
	if (fsys(SYS_getsockopt, sock, SOL_SOCKET, SO_PEERCRED, (long)&cred, (long)&cl) < 0 || cl != sizeof(cred))
		msg = no_cred;
	else if ((uint32_t)cred.uid != (uint32_t)fsys(SYS_geteuid, 0, 0, 0, 0, 0))
		msg = other_uid;
	if (!msg && dl + 16 > sizeof(path))
		msg = no_info;
	if (!msg) {
		// The supervisor's pid, as session.Dir.WriteInfo records it
		// (json.Marshal: "pid" is a key, never inside a string).
		fcopy(path, sessdir, dl);
		fcopy(path + dl, "/info.json", 11);
		if (fread_file(path, buf, sizeof(buf)) < 0 || !(p = ffind(buf, "\"pid\":")))
			msg = no_info;
		else {
			p += 6;
			while (*p >= '0' && *p <= '9' && pid < 100000000u)
				pid = pid * 10 + (uint32_t)(*p++ - '0');
			if (pid == 0)
				msg = no_info;
		}
	}
	if (!msg && (cred.pid <= 0 || (uint32_t)cred.pid != pid))
		msg = not_sup;
	if (!msg) {
		// A process in a sandbox (a PID namespace below this one) has
		// more than one pid on its NSpid line: a supervisor has one.
		size_t k = 0;
		fcopy(path, "/proc/", 6);
		k = 6 + fdec(path + 6, pid);
		fcopy(path + k, "/status", 8);
		if (fread_file(path, buf, sizeof(buf)) < 0 || !(p = ffind(buf, "\nNSpid:")))
			msg = in_ns;
		else {
			int fields = 0, in = 0;
			for (p += 7; *p && *p != '\n'; p++) {
				int digit = *p >= '0' && *p <= '9';
				if (digit && !in)
					fields++;
				in = digit;
			}
			if (fields != 1)
				msg = in_ns;
		}
	}
	if (!msg)
		return 0;
	if (why && whyn > 0) {
		size_t n = flen(msg);
		if (n >= whyn)
			n = whyn - 1;
		fcopy(why, msg, n);
		why[n] = 0;
	}
	return -1;
}

#if defined(__x86_64__)

static volatile int fast_sock = -1;
// --json, and --report's descriptor and path (in argv): as the full
// client's report_fd and report_path.
static int fast_json;
static int fast_report_fd = -1;
static const char *fast_report_path;

static void fwrite_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		long w = fsys(SYS_write, fd, (long)s, (long)n, 0, 0);
		if (w == -4)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void fputs2(const char *s) { fwrite_all(2, s, flen(s)); }

static int fast_write_report(const char *data, size_t n);

// fast_gone prints and writes what the full client's gone() does: the
// message, the report on stderr for --json and at --report's path; exit
// 125.
static void __attribute__((noreturn)) fast_gone(const char *name, const char *why)
{
	char msg[512], rep[1024];
	size_t m = 0, r = 0;
	const char *parts[] = {"session_gone: session ", name, " is not running (", why, "); start it with: cordon session start --name ", name};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t l = flen(parts[i]);
		if (m + l >= sizeof(msg))
			l = sizeof(msg) - 1 - m;
		fcopy(msg + m, parts[i], l);
		m += l;
	}
	msg[m] = 0;
	const char *rparts[] = {"{\n  \"exit_code\": " CORDON_XSTR(CORDON_EXIT_SETUP) ",\n  \"failure_type\": \"session_gone\",\n  \"failure_detail\": \"", msg,
				"\",\n  \"duration_ms\": 0\n}\n"};
	for (size_t i = 0; i < 3; i++) {
		size_t l = flen(rparts[i]);
		if (r + l >= sizeof(rep))
			l = sizeof(rep) - 1 - r;
		fcopy(rep + r, rparts[i], l);
		r += l;
	}
	fputs2("cordon: ");
	fwrite_all(2, msg, m);
	fputs2("\n");
	if (fast_json)
		fwrite_all(2, rep, r);
	fast_write_report(rep, r);
	fsys(SYS_exit_group, CORDON_EXIT_SETUP, 0, 0, 0, 0);
	__builtin_unreachable();
}

static void fast_forward(int sig)
{
	uint32_t frame[2] = {EXEC_SIG_MAGIC, (uint32_t)sig};
	if (fast_sock >= 0)
		fsys(SYS_write, fast_sock, (long)frame, sizeof(frame), 0, 0);
}

void cordon_fast_restorer(void);
__asm__(".text\n"
	".type cordon_fast_restorer,@function\n"
	"cordon_fast_restorer:\n"
	"\tmov $15, %eax\n" // rt_sigreturn
	"\tsyscall\n"
	".size cordon_fast_restorer, .-cordon_fast_restorer\n");

// The kernel's struct sigaction on amd64.
struct fast_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#define FAST_SA_RESTORER 0x04000000

static int fast_valid_name(const char *s)
{
	size_t n = flen(s);
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

// fast_private is the full client's private_dir: a directory of this
// user's, not writable by group or others, not a link.
static int fast_private(const char *p, uint32_t uid)
{
	struct stat st;
	if (fsys(SYS_newfstatat, AT_FDCWD, (long)p, (long)&st, AT_SYMLINK_NOFOLLOW, 0) < 0)
		return -1;
	return S_ISDIR(st.st_mode) && st.st_uid == uid && !(st.st_mode & 022) ? 0 : -1;
}

static const char *fast_getenv(char **envp, const char *key)
{
	for (; *envp; envp++) {
		const char *v = fprefix(*envp, key);
		if (v && *v == '=')
			return v + 1;
	}
	return NULL;
}

// The request is built here: large enough for any ordinary environment;
// a larger one goes to the full client. In .bss, so only what is written
// is ever paged in.
static char fast_buf[256 << 10];
static size_t fast_len;

static int fast_put(const char *a, const char *b)
{
	size_t la = flen(a), lb = b ? flen(b) : 0;
	if (fast_len + la + lb + 1 > sizeof(fast_buf))
		return -1;
	fcopy(fast_buf + fast_len, a, la);
	fcopy(fast_buf + fast_len + la, b, lb);
	fast_len += la + lb;
	fast_buf[fast_len++] = 0;
	return 0;
}

// fast_dir builds dst = a + b (+ c) within n bytes; -1 when it does not fit.
static int fast_dir(char *dst, size_t n, const char *a, const char *b, const char *c)
{
	size_t la = flen(a), lb = flen(b), lc = c ? flen(c) : 0;
	if (la + lb + lc + 1 > n)
		return -1;
	fcopy(dst, a, la);
	fcopy(dst + la, b, lb);
	fcopy(dst + la + lb, c ? c : "", lc);
	dst[la + lb + lc] = 0;
	return 0;
}

// The --report file, as the full client handles it (see open_report,
// reopen_report and write_report there): opened before the request leaves,
// following no symbolic link, a regular file with one link; written once
// the command's processes are gone, through the descriptor only when the
// path still names that file, else in a file created afresh in place of
// whatever the command left there.

// fast_report_dir opens the folder of path one component at a time,
// following no symbolic link, and points *name at the last component (in
// copy); the folder's descriptor or -errno.
static long fast_report_dir(const char *path, char *copy, size_t n, const char **name)
{
	size_t l = flen(path);
	*name = NULL;
	if (l + 1 > n)
		return -36; // ENAMETOOLONG
	fcopy(copy, path, l + 1);
	long dfd = fsys(SYS_openat, AT_FDCWD, (long)(path[0] == '/' ? "/" : "."), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (dfd < 0)
		return dfd;
	char *c = copy;
	while (*c) {
		if (*c == '/') {
			c++;
			continue;
		}
		char *e = c;
		while (*e && *e != '/')
			e++;
		int more = *e != 0;
		*e = 0;
		if (*name) {
			long nd = fsys(SYS_openat, dfd, (long)*name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0);
			fsys(SYS_close, dfd, 0, 0, 0, 0);
			if (nd < 0)
				return nd;
			dfd = nd;
		}
		*name = c;
		c = more ? e + 1 : e;
	}
	if (!*name || feq(*name, ".") || feq(*name, "..")) {
		fsys(SYS_close, dfd, 0, 0, 0, 0);
		return -21; // EISDIR
	}
	return dfd;
}

// fast_open_file opens name in dfd for writing without following it or
// blocking, and accepts only a regular file with one link.
static long fast_open_file(long dfd, const char *name, int excl)
{
	long fd = fsys(SYS_openat, dfd, (long)name, O_WRONLY | O_CREAT | (excl ? O_EXCL : 0) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		       0644, 0);
	struct stat st;
	if (fd >= 0 && (fsys(SYS_fstat, fd, (long)&st, 0, 0, 0) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
		fsys(SYS_close, fd, 0, 0, 0, 0);
		return -22; // EINVAL
	}
	return fd;
}

static long fast_open_report(const char *path)
{
	char copy[4200];
	const char *name;
	long dfd = fast_report_dir(path, copy, sizeof(copy), &name);
	if (dfd < 0)
		return dfd;
	long fd = fast_open_file(dfd, name, 0);
	fsys(SYS_close, dfd, 0, 0, 0, 0);
	if (fd >= 0) {
		long e = fsys(SYS_ftruncate, fd, 0, 0, 0, 0);
		if (e < 0) {
			fsys(SYS_close, fd, 0, 0, 0, 0);
			return e;
		}
	}
	return fd;
}

static long fast_replace_file(long dfd, const char *name)
{
	long e = fsys(SYS_unlinkat, dfd, (long)name, 0, 0, 0);
	if (e < 0 && e != -2) // ENOENT
		fsys(SYS_unlinkat, dfd, (long)name, AT_REMOVEDIR, 0, 0);
	long fd = fast_open_file(dfd, name, 1);
	if (fd == -17) // EEXIST
		fd = fast_open_file(dfd, name, 0);
	return fd;
}

// fast_own_folder_writable is the full client's own_folder_writable.
static int fast_own_folder_writable(long dfd)
{
	long fd = fsys(SYS_openat, dfd, (long)".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return 0;
	struct stat st;
	int changed = fsys(SYS_fstat, fd, (long)&st, 0, 0, 0) == 0 && st.st_uid == (uint32_t)fsys(SYS_geteuid, 0, 0, 0, 0, 0) &&
		      (st.st_mode & 0300) != 0300 && fsys(SYS_fchmod, fd, (long)((st.st_mode & 07777) | 0300), 0, 0, 0) == 0;
	fsys(SYS_close, fd, 0, 0, 0, 0);
	return changed;
}

static long fast_reopen_report(void)
{
	char copy[4200];
	const char *name;
	long dfd = fast_report_dir(fast_report_path, copy, sizeof(copy), &name);
	if (dfd < 0)
		return dfd;
	struct stat now, held;
	long fd;
	if (fsys(SYS_newfstatat, dfd, (long)name, (long)&now, AT_SYMLINK_NOFOLLOW, 0) == 0 &&
	    fsys(SYS_fstat, fast_report_fd, (long)&held, 0, 0, 0) == 0 && S_ISREG(now.st_mode) && now.st_dev == held.st_dev &&
	    now.st_ino == held.st_ino && now.st_nlink == 1) {
		fd = fsys(SYS_dup, fast_report_fd, 0, 0, 0, 0);
	} else {
		fd = fast_replace_file(dfd, name);
		if (fd < 0 && fast_own_folder_writable(dfd))
			fd = fast_replace_file(dfd, name);
	}
	fsys(SYS_close, dfd, 0, 0, 0, 0);
	if (fd >= 0) {
		long e = fsys(SYS_ftruncate, fd, 0, 0, 0, 0);
		if (e == 0)
			e = fsys(SYS_lseek, fd, 0, SEEK_SET, 0, 0);
		if (e < 0) {
			fsys(SYS_close, fd, 0, 0, 0, 0);
			return e;
		}
	}
	return fd;
}

// fast_write_report writes the report once and closes it: 0, or -errno.
static int fast_write_report(const char *data, size_t n)
{
	if (fast_report_fd < 0)
		return 0;
	long fd = fast_reopen_report();
	fsys(SYS_close, fast_report_fd, 0, 0, 0, 0);
	fast_report_fd = -1;
	if (fd < 0)
		return (int)fd;
	while (n > 0) {
		long w = fsys(SYS_write, fd, (long)data, (long)n, 0, 0);
		if (w == -4)
			continue;
		if (w <= 0) {
			fsys(SYS_close, fd, 0, 0, 0, 0);
			return w < 0 ? (int)w : -5; // EIO
		}
		data += w;
		n -= (size_t)w;
	}
	return (int)fsys(SYS_close, fd, 0, 0, 0, 0);
}

// fast_strerror is glibc's strerror for the errors a report's write can
// meet.
static void fast_strerror(int e, char *buf, size_t n)
{
	static const struct {
		int e;
		const char *s;
	} t[] = {
		{1, "Operation not permitted"}, {2, "No such file or directory"}, {4, "Interrupted system call"},
		{5, "Input/output error"}, {6, "No such device or address"}, {9, "Bad file descriptor"},
		{11, "Resource temporarily unavailable"}, {12, "Cannot allocate memory"}, {13, "Permission denied"},
		{14, "Bad address"}, {16, "Device or resource busy"}, {17, "File exists"}, {18, "Invalid cross-device link"},
		{20, "Not a directory"}, {21, "Is a directory"}, {22, "Invalid argument"}, {26, "Text file busy"},
		{27, "File too large"}, {28, "No space left on device"}, {30, "Read-only file system"}, {31, "Too many links"},
		{36, "File name too long"}, {39, "Directory not empty"}, {40, "Too many levels of symbolic links"},
		{75, "Value too large for defined data type"}, {116, "Stale file handle"}, {122, "Disk quota exceeded"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i].e == e) {
			size_t l = flen(t[i].s);
			if (l >= n)
				l = n - 1;
			fcopy(buf, t[i].s, l);
			buf[l] = 0;
			return;
		}
	}
	size_t k = 0;
	fcopy(buf, "Unknown error ", 14);
	k = 14 + fdec(buf + 14, (uint32_t)e);
	buf[k] = 0;
}

// fast_connect finds session name's socket as the full client does,
// connects and checks its server; the socket, or -1 (nothing left open).
static int fast_connect(const char *name, char **envp, char *sessdir, size_t n)
{
	uint32_t uid = (uint32_t)fsys(SYS_geteuid, 0, 0, 0, 0, 0);
	char state[4096];
	struct stat st;
	const char *x = fast_getenv(envp, "XDG_RUNTIME_DIR");
	if (uid == 0) {
		if (fast_dir(state, sizeof(state), "/run/cordon", "", NULL) < 0)
			return -1;
	} else if (x && *x && fsys(SYS_newfstatat, AT_FDCWD, (long)x, (long)&st, 0, 0) == 0 && S_ISDIR(st.st_mode) &&
		   st.st_uid == uid) {
		if (fast_dir(state, sizeof(state), x, "/cordon", NULL) < 0)
			return -1;
	} else {
		const char *t = fast_getenv(envp, "TMPDIR");
		char num[12];
		num[fdec(num, uid)] = 0;
		if (!t || !*t)
			t = "/tmp";
		if (fast_dir(state, sizeof(state), t, "/cordon-", num) < 0)
			return -1;
	}
	char p[4200];
	if (fast_private(state, uid) < 0 || fast_dir(p, sizeof(p), state, "/sessions", NULL) < 0 || fast_private(p, uid) < 0 ||
	    fast_dir(sessdir, n, p, "/", name) < 0 || fast_private(sessdir, uid) < 0)
		return -1;
	struct sockaddr_un sa;
	fzero(&sa, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (fast_dir(sa.sun_path, sizeof(sa.sun_path), sessdir, "/sock", NULL) < 0)
		return -1;
	long s = fsys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, 0, 0);
	if (s < 0)
		return -1;
	if (fsys(SYS_connect, s, (long)&sa, sizeof(sa), 0, 0) < 0 || cordon_exec_server_ok((int)s, sessdir, NULL, 0) < 0) {
		fsys(SYS_close, s, 0, 0, 0, 0);
		return -1;
	}
	return (int)s;
}

// fast_flags parses what the fast path handles; -1 for anything else.
static int fast_flags(int argc, char **argv, const char **name, const char **timeout, const char **cwd, int *detach,
		      const char **report, int *json)
{
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (feq(a, "--"))
			return *name ? i + 1 : -1;
		if (a[0] != '-') {
			if (!*name) {
				*name = a;
				continue;
			}
			return i; // the command, without "--"
		}
		const char *f = a[1] == '-' ? a + 2 : a + 1;
		const char *v;
		if (feq(f, "detach")) {
			*detach = 1;
			continue;
		}
		if (feq(f, "json")) {
			*json = 1;
			continue;
		}
		const char **dst = (v = fprefix(f, "timeout")) ? timeout : (v = fprefix(f, "cwd")) ? cwd : (v = fprefix(f, "report")) ? report : NULL;
		if (!dst)
			return -1; // --help, an unknown flag: the full client
		if (*v == '=')
			*dst = v + 1;
		else if (*v == 0 && i + 1 < argc)
			*dst = argv[++i];
		else
			return -1;
	}
	return -1;
}

// fast_request builds the request in fast_buf; -1 when it does not fit.
static int fast_request(char **argv, int argc, int first, char **envp, const char *timeout, const char *cwd, int detach)
{
	uint32_t nopts = 0, nargv = 0, nenv = 0;
	char wd[4096];
	fast_len = 32;
	if (timeout && (fast_put("timeout=", timeout) < 0 || !++nopts))
		return -1;
	if (cwd) {
		if (flen(cwd) > 4096 || fast_put("cwd=", cwd) < 0)
			return -1;
		nopts++;
	} else if (fsys(SYS_getcwd, (long)wd, sizeof(wd), 0, 0, 0) > 0 && wd[0] == '/') {
		if (fast_put("wd=", wd) < 0)
			return -1;
		nopts++;
	}
	if (detach && (fast_put("detach=1", NULL) < 0 || !++nopts))
		return -1;
	if ((fast_report_path || fast_json) && (fast_put("report=1", NULL) < 0 || !++nopts))
		return -1;
	for (int i = first; i < argc; i++, nargv++)
		if (fast_put(argv[i], NULL) < 0)
			return -1;
	for (char **e = envp; *e; e++, nenv++)
		if (fast_put(*e, NULL) < 0)
			return -1;
	uint32_t h[8] = {EXEC_REQ_MAGIC, EXEC_PROTO_VERSION | EXEC_REQ_EXEC << 16, nopts, nargv, nenv, (uint32_t)(fast_len - 32), 0, 0};
	fcopy(fast_buf, (const char *)h, sizeof(h));
	return 0;
}

// fast_send sends the request with fds 0, 1 and 2; -1 on failure.
static int fast_send(int s)
{
	int fds[3] = {0, 1, 2};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} c;
	fzero(&c, sizeof(c));
	struct iovec iov = {.iov_base = fast_buf, .iov_len = fast_len};
	struct msghdr m;
	fzero(&m, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = c.buf;
	m.msg_controllen = sizeof(c.buf);
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(fds));
	fcopy((char *)CMSG_DATA(h), (const char *)fds, sizeof(fds));
	size_t sent = 0;
	while (sent < fast_len) {
		long w = fsys(SYS_sendmsg, s, (long)&m, MSG_NOSIGNAL, 0, 0);
		if (w == -4)
			continue;
		if (w < 0)
			return -1;
		sent += (size_t)w;
		iov.iov_base = fast_buf + sent;
		iov.iov_len = fast_len - sent;
		m.msg_control = NULL;
		m.msg_controllen = 0;
	}
	return 0;
}

// fast_reply reads the response, prints its message and exits with its
// code; a malformed one is refused as the full client refuses it.
static void __attribute__((noreturn)) fast_reply(int s, const char *name)
{
	uint32_t rh[6];
	if (fread_full(s, rh, sizeof(rh)) < 0)
		fast_gone(name, "it ended while the command ran");
	if (rh[0] != EXEC_RESP_MAGIC || rh[1] != EXEC_PROTO_VERSION || rh[2] > 255 || rh[3] > EXEC_MAX_RESPONSE ||
	    rh[4] > EXEC_MAX_RESPONSE - rh[3])
		fast_gone(name, "its reply was malformed");
	size_t n = (size_t)rh[3] + rh[4];
	char *body = fast_buf;
	if (n > sizeof(fast_buf)) {
		long p = fsys6(SYS_mmap, 0, (long)n, 3 /* PROT_READ|PROT_WRITE */, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, -1, 0);
		if (p < 0 && p > -4096)
			fast_gone(name, "its reply does not fit in memory");
		body = (char *)p;
	}
	if (fread_full(s, body, n) < 0)
		fast_gone(name, "it ended while the command ran");
	fwrite_all(2, body, rh[3]);
	if (rh[4] > 0) {
		if (fast_json)
			fwrite_all(2, body + rh[3], rh[4]);
		int e = fast_write_report(body + rh[3], rh[4]);
		if (e < 0) {
			char why[64];
			fast_strerror(-e, why, sizeof(why));
			fputs2("cordon: the report ");
			fputs2(fast_report_path);
			fputs2(" was replaced or moved while the command ran and cannot be written again (");
			fputs2(why);
			fputs2("); give --report a path outside the folders the session can write\n");
			fsys(SYS_exit_group, CORDON_EXIT_SETUP, 0, 0, 0, 0);
		}
	}
	fsys(SYS_exit_group, (long)rh[2], 0, 0, 0, 0);
	__builtin_unreachable();
}

// fast_start checks what the fast path needs, builds the request and
// connects to the session's supervisor: the socket, or -1 to leave the
// exec to the full client.
static int fast_start(int argc, char **argv, char **envp, int first, const char *name, const char *timeout, const char *cwd,
		      int detach)
{
	// A closed 0, 1 or 2, or a terminal on both 0 and 1: the full client.
	char tio[64];
	for (int fd = 0; fd < 3; fd++)
		if (fsys(SYS_fcntl, fd, F_GETFD, 0, 0, 0) < 0)
			return -1;
	if (fsys(SYS_ioctl, 0, 0x5401 /* TCGETS */, (long)tio, 0, 0) == 0 && fsys(SYS_ioctl, 1, 0x5401, (long)tio, 0, 0) == 0)
		return -1;
	if (fast_request(argv, argc, first, envp, timeout, cwd, detach) < 0)
		return -1;
	char sessdir[4200];
	return fast_connect(name, envp, sessdir, sizeof(sessdir));
}

// cordon_fast runs at the entry point with the initial stack (argc, argv,
// NULL, envp, NULL, auxv); it returns when the C library's start is to
// take over, and otherwise exits.
FAST_NOSP void cordon_fast(long *sp)
{
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1), **envp = argv + argc + 1;
	const char *name = NULL, *timeout = NULL, *cwd = NULL, *report = NULL;
	int detach = 0, json = 0;
	if (argc < 3 || !feq(argv[1], "exec") || cordon_invoked_as_oci(argv[0]))
		return;
	int first = fast_flags(argc, argv, &name, &timeout, &cwd, &detach, &report, &json);
	if (first < 0 || first >= argc || !argv[first][0] || !fast_valid_name(name))
		return;
	fast_json = json;
	fast_report_path = report;
	if (report) {
		long fd = fast_open_report(report);
		if (fd < 0)
			return; // the full client refuses it, with the reason
		fast_report_fd = (int)fd;
	}
	int s = fast_start(argc, argv, envp, first, name, timeout, cwd, detach);
	if (s < 0) {
		if (fast_report_fd >= 0)
			fsys(SYS_close, fast_report_fd, 0, 0, 0, 0);
		fast_report_fd = -1;
		return;
	}

	// As the full client: the forwarders are in place before the request
	// leaves, with the signals held until it is sent.
	uint64_t fwd = 1ull << (SIGINT - 1) | 1ull << (SIGTERM - 1) | 1ull << (SIGHUP - 1) | 1ull << (SIGQUIT - 1), old = 0;
	fsys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&fwd, (long)&old, 8, 0);
	struct fast_ksigaction sa = {fast_forward, FAST_SA_RESTORER, cordon_fast_restorer, 0};
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (int i = 0; i < 4; i++)
		fsys(SYS_rt_sigaction, sigs[i], (long)&sa, 0, 8, 0);
	fast_sock = s;
	if (fast_send(s) < 0)
		fast_gone(name, "it hung up");
	struct fast_ksigaction ign = {SIG_IGN, FAST_SA_RESTORER, cordon_fast_restorer, 0};
	fsys(SYS_rt_sigaction, SIGPIPE, (long)&ign, 0, 8, 0);
	fsys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0);
	fast_reply(s, name);
}

// cordonentry is the binary's ELF entry point (execclient_linux.go links
// it with -e): it hands the initial stack to cordon_fast and, when that
// returns, jumps to glibc's _start with the registers the kernel (or the
// dynamic loader: rdx, its finalizer) gave it.
__asm__(".text\n"
	".globl cordonentry\n"
	".type cordonentry,@function\n"
	"cordonentry:\n"
	"\tendbr64\n"
	"\tmov %rdx, %r12\n"
	"\tmov %rsp, %rdi\n"
	"\tcall cordon_fast\n"
	"\tmov %r12, %rdx\n"
	"\tjmp _start\n"
	".size cordonentry, .-cordonentry\n");

#endif
