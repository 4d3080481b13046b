//go:build linux && cgo

// How `cordon exec`'s C client finds a session's socket and checks that
// the session's supervisor serves it, as the Go client does
// (internal/session: SessionPath, CheckServer): nothing is sent to a
// server that fails the check.

#define _GNU_SOURCE
#include "execsys_linux.h"

#if defined(__x86_64__)

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "execclient_linux.h"
#include "execproto_linux.h"

// read_file reads at most n-1 bytes of path (not followed when it is a
// link) and NUL-terminates them; it returns the length or -1.
static long read_file(const char *path, char *buf, size_t n)
{
	long fd = xsys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return -1;
	size_t got = 0;
	for (;;) {
		long r = xsys(SYS_read, fd, (long)(buf + got), (long)(n - 1 - got), 0, 0);
		if (r == -X_EINTR)
			continue;
		if (r < 0) {
			xclose(fd);
			return -1;
		}
		if (r == 0 || (got += (size_t)r) == n - 1)
			break;
	}
	xclose(fd);
	buf[got] = 0;
	return (long)got;
}

// info_pid returns the supervisor's pid as sessdir's info.json records it
// (session.Dir.WriteInfo, json.Marshal: "pid" is a key, never inside a
// string), or 0.
static uint32_t info_pid(const char *sessdir)
{
	char path[4200], buf[8192];
	const char *p;
	uint32_t pid = 0;
	if (xcat(path, sizeof(path), sessdir, "/info.json", NULL) < 0 || read_file(path, buf, sizeof(buf)) < 0 ||
	    !(p = xfind(buf, "\"pid\":")))
		return 0;
	for (p += 6; *p >= '0' && *p <= '9' && pid < 100000000u; p++)
		pid = pid * 10 + (uint32_t)(*p - '0');
	return pid;
}

// in_this_pidns reports whether pid is a process of this PID namespace: a
// process in a sandbox (a PID namespace below this one) has more than one
// pid on its NSpid line.
static int in_this_pidns(uint32_t pid)
{
	char path[32], buf[8192];
	const char *p;
	size_t k = 6;
	xcopy(path, "/proc/", 6);
	k += xdec(path + k, pid);
	xcopy(path + k, "/status", 8);
	if (read_file(path, buf, sizeof(buf)) < 0 || !(p = xfind(buf, "\nNSpid:")))
		return 0;
	int fields = 0, in = 0;
	for (p += 7; *p && *p != '\n'; p++) {
		int digit = *p >= '0' && *p <= '9';
		if (digit && !in)
			fields++;
		in = digit;
	}
	return fields == 1;
}

int cordon_exec_server_ok(int sock, const char *sessdir, char *why, size_t whyn)
{
	const char *msg = NULL;
	struct ucred cred;
	xzero(&cred, sizeof(cred));
	socklen_t cl = sizeof(cred);
	uint32_t pid = 0;
	if (xsys(SYS_getsockopt, sock, SOL_SOCKET, SO_PEERCRED, (long)&cred, (long)&cl) < 0 || cl != sizeof(cred))
		msg = EXEC_WHY_NO_CRED;
	else if ((uint32_t)cred.uid != (uint32_t)xsys(SYS_geteuid, 0, 0, 0, 0, 0))
		msg = EXEC_WHY_OTHER_UID;
	else if ((pid = info_pid(sessdir)) == 0)
		msg = EXEC_WHY_NO_INFO;
	else if (cred.pid <= 0 || (uint32_t)cred.pid != pid)
		msg = EXEC_WHY_NOT_SUPERVISOR;
	else if (!in_this_pidns(pid))
		msg = EXEC_WHY_IN_SANDBOX;
	if (!msg)
		return 0;
	if (why && whyn > 0) {
		size_t n = xlen(msg);
		if (n >= whyn)
			n = whyn - 1;
		xcopy(why, msg, n);
		why[n] = 0;
	}
	return -1;
}

// private_dir: a directory of this user's, not writable by group or
// others, not a link.
static int private_dir(const char *p, uint32_t uid)
{
	struct stat st;
	if (xsys(SYS_newfstatat, AT_FDCWD, (long)p, (long)&st, AT_SYMLINK_NOFOLLOW, 0) < 0)
		return -1;
	return S_ISDIR(st.st_mode) && st.st_uid == uid && !(st.st_mode & 022) ? 0 : -1;
}

static const char *env_get(char **envp, const char *key)
{
	for (; *envp; envp++) {
		const char *v = xprefix(*envp, key);
		if (v && *v == '=')
			return v + 1;
	}
	return NULL;
}

// state_dir is runner/linux's defaultStateDir: -1 when it does not fit.
static int state_dir(char *state, size_t n, uint32_t uid, char **envp)
{
	struct stat st;
	const char *x = env_get(envp, "XDG_RUNTIME_DIR");
	if (uid == 0)
		return xcat(state, n, "/run/cordon", "", NULL);
	if (x && *x && xsys(SYS_newfstatat, AT_FDCWD, (long)x, (long)&st, 0, 0) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid)
		return xcat(state, n, x, "/cordon", NULL);
	const char *t = env_get(envp, "TMPDIR");
	char num[12];
	num[xdec(num, uid)] = 0;
	return xcat(state, n, t && *t ? t : "/tmp", "/cordon-", num);
}

int cx_connect(const char *name, char **envp)
{
	uint32_t uid = (uint32_t)xsys(SYS_geteuid, 0, 0, 0, 0, 0);
	char state[4096], p[4200], sessdir[4200];
	if (state_dir(state, sizeof(state), uid, envp) < 0 || private_dir(state, uid) < 0 ||
	    xcat(p, sizeof(p), state, "/sessions", NULL) < 0 || private_dir(p, uid) < 0 ||
	    xcat(sessdir, sizeof(sessdir), p, "/", name) < 0 || private_dir(sessdir, uid) < 0)
		return -1;
	struct sockaddr_un sa;
	xzero(&sa, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (xcat(sa.sun_path, sizeof(sa.sun_path), sessdir, "/sock", NULL) < 0)
		return -1;
	long s = xsys(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, 0, 0);
	if (s < 0)
		return -1;
	if (xsys(SYS_connect, s, (long)&sa, sizeof(sa), 0, 0) < 0 || cordon_exec_server_ok((int)s, sessdir, NULL, 0) < 0) {
		xclose(s);
		return -1;
	}
	return (int)s;
}

#endif
