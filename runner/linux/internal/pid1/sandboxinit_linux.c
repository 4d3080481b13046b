//go:build linux && cgo

// cordon's PID 1 inside the sandbox, in C.
//
// The runner starts every sandboxed command as
//   /proc/self/exe cordon-sandbox-init -- CMD ARGS...
// inside the container, where /proc/self/exe is libcontainer's sealed copy
// of the cordon binary. This constructor runs before the Go runtime (as
// runc's nsenter does) and, for that argument, never returns: PID 1 then
// costs an exec and a fork instead of a Go runtime start-up (about 4 ms of
// every run, measured with hack/bench).
//
// It:
//   - exits as soon as cordon is gone: fd 3 is the read end of a pipe whose
//     write end only cordon holds, and EOF on it means cordon died. When PID 1
//     exits the kernel kills the whole PID namespace, so a SIGKILLed cordon
//     leaves no sandboxed process behind;
//   - loads the seccomp filter cordon compiled (handed over in the
//     environment, removed before the command starts) with TSYNC, after
//     libcontainer set no_new_privs; without a filter the command never runs;
//   - runs the command in its own process group (the terminal's foreground
//     group when stdin is a terminal) and forwards signals to that group;
//   - reaps every orphan and exits with the command's status (128+N when a
//     signal N ended it; 127 and 126 when it cannot be executed);
//   - reports its own failures on fd 4, the write end of a status pipe whose
//     read end only cordon holds: "setup MESSAGE" (it could not finish
//     setting the sandbox up; exit 125) or "exec CODE MESSAGE" (the command
//     cannot be executed; exit 126 or 127), "started -" once the command's
//     process exists, and "exited WSTATUS" (the command's wait status) when
//     it has ended. The fd is close-on-exec, and this
//     init is not dumpable, so the command can never write it: cordon trusts
//     this pipe, never a "cordon: ..." line on the command's stderr, which the
//     command can print itself.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../../../../internal/exitcodes/exitcodes.h"
#include "sandboxinit_linux.h"

#define CORDON_INIT_ARG "cordon-sandbox-init"
#define CORDON_LIVENESS_FD 3
#define CORDON_STATUS_FD 4
// The broker socket: when the filter hands calls to cordon's broker
// (SECCOMP_FILTER_FLAG_NEW_LISTENER), the listener is sent over it.
#define CORDON_BROKER_FD 5
#define CORDON_SECCOMP_ENV "_CORDON_SECCOMP_BPF"
#define CORDON_MAX_BPF 4096
// Variables the dynamic loader acts on (LD_PRELOAD, LD_LIBRARY_PATH, ...)
// would load code into this init before its filter is in place, so the
// runner hands them over under this prefix and they are restored only in
// the command's environment.
#define CORDON_ENV_PREFIX "_CORDON_ENV_"

// status_fd is CORDON_STATUS_FD once this process is known to be the
// sandbox's PID 1 with cordon's status pipe; -1 before (and in the session
// init, which reports on its own protocol).
static int status_fd = -1;

// report writes one status record; a pipe write this small is atomic.
static void report(const char *kind, int code, const char *msg)
{
	if (status_fd < 0)
		return;
	if (code)
		dprintf(status_fd, "%s %d %s\n", kind, code, msg);
	else
		dprintf(status_fd, "%s %s\n", kind, msg);
}

static void die(const char *msg)
{
	report("setup", 0, msg);
	fprintf(stderr, "cordon: %s\n", msg);
	_exit(CORDON_EXIT_SETUP);
}

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

// b64decode decodes standard base64 with padding; NULL on any error.
static unsigned char *b64decode(const char *in, size_t *outlen)
{
	size_t n = strlen(in);
	if (n == 0 || n % 4 != 0)
		return NULL;
	unsigned char *out = malloc(n / 4 * 3);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)in[i + k];
			v[k] = (c == '=' && i + 4 == n && k >= 2) ? -2 : b64val(c);
			if (v[k] == -1 || (v[k] == -2 && k == 2 && in[i + 3] != '=')) {
				free(out);
				return NULL;
			}
		}
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (v[2] != -2)
			out[o++] = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (v[3] != -2)
			out[o++] = (unsigned char)(v[2] << 6 | v[3]);
	}
	*outlen = o;
	return out;
}

// send_listener sends the seccomp listener fd over the unix socket sock
// (SCM_RIGHTS, one byte "L"); the caller then closes its copy, so cordon's
// broker holds the only one.
static int send_listener(int sock, int fd)
{
	char byte = 'L';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t r;
	do
		r = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

// cordon_load_seccomp installs the filter handed over in CORDON_SECCOMP_ENV
// ("FLAGS:BASE64") on every thread, and removes the variable. When FLAGS
// ask for a listener (the broker), it is sent over broker_sock before any
// call it governs can be made, and closed here. The session init
// (sessioninit_linux.c) loads it the same way.
void cordon_load_seccomp(int broker_sock)
{
	const char *v = getenv(CORDON_SECCOMP_ENV);
	if (!v || !*v)
		die("no seccomp filter was handed to the sandbox init");
	char *copy = strdup(v);
	if (!copy)
		die("out of memory");
	unsetenv(CORDON_SECCOMP_ENV);
	char *colon = strchr(copy, ':');
	if (!colon)
		die("bad seccomp hand-over");
	*colon = '\0';
	char *end = NULL;
	errno = 0;
	unsigned long flags = strtoul(copy, &end, 10);
	if (errno || end == copy || *end != '\0')
		die("bad seccomp flags");
	size_t n = 0;
	unsigned char *prog = b64decode(colon + 1, &n);
	if (!prog || n == 0 || n % sizeof(struct sock_filter) != 0 || n / sizeof(struct sock_filter) > CORDON_MAX_BPF)
		die("bad seccomp filter");
	struct sock_fprog fp = {
		.len = (unsigned short)(n / sizeof(struct sock_filter)),
		.filter = (struct sock_filter *)prog,
	};
	int listen = (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) != 0;
	if (listen && broker_sock < 0)
		die("the seccomp filter needs a broker but none was handed to the sandbox init");
	// TSYNC and NEW_LISTENER together need TSYNC_ESRCH (this init is
	// single-threaded anyway).
	unsigned long load = flags | SECCOMP_FILTER_FLAG_TSYNC | (listen ? SECCOMP_FILTER_FLAG_TSYNC_ESRCH : 0);
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, load, &fp);
	if (r < 0 || (!listen && r != 0)) {
		char msg[160];
		snprintf(msg, sizeof(msg), "seccomp(SET_MODE_FILTER): %s", r < 0 ? strerror(errno) : "a thread could not be synchronized");
		die(msg);
	}
	if (listen) {
		if (send_listener(broker_sock, (int)r) < 0)
			die("cannot hand the seccomp listener to cordon's broker");
		close((int)r);
	}
	free(prog);
	free(copy);
}

// restore_env renames _CORDON_ENV_NAME=value back to NAME=value.
static void restore_env(void)
{
	extern char **environ;
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **saved = calloc(n + 1, sizeof(char *));
	if (!saved)
		die("out of memory");
	size_t k = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, CORDON_ENV_PREFIX, strlen(CORDON_ENV_PREFIX)) == 0)
			saved[k++] = strdup(*e);
	for (size_t i = 0; i < k; i++) {
		char *entry = saved[i];
		char *eq = strchr(entry, '=');
		if (!eq)
			continue;
		*eq = '\0';
		unsetenv(entry);
		setenv(entry + strlen(CORDON_ENV_PREFIX), eq + 1, 1);
	}
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGWINCH};

__attribute__((constructor)) static void cordon_sandbox_init(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 2 || strcmp(argv[1], CORDON_INIT_ARG) != 0)
		return;
	if (getpid() != 1)
		die(CORDON_INIT_ARG " runs only as PID 1 inside a sandbox");
	// Not dumpable: the command (same uid) can then neither open
	// /proc/1/fd/3 to hold the liveness pipe open, nor read /proc/1/environ,
	// nor ptrace this init.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die("cannot make the sandbox init non-dumpable");
	// The liveness pipe must not reach the command.
	if (fcntl(CORDON_LIVENESS_FD, F_SETFD, FD_CLOEXEC) < 0)
		die("no liveness pipe from cordon");
	// Nor the status pipe: only this init and its child before exec
	// write it.
	if (fcntl(CORDON_STATUS_FD, F_SETFD, FD_CLOEXEC) < 0)
		die("no status pipe from cordon");
	status_fd = CORDON_STATUS_FD;
	int first = 2;
	if (argc > 2 && strcmp(argv[2], "--") == 0)
		first = 3;
	if (first >= argc)
		die("no command");
	// The broker socket, when there is one, must not reach the command.
	int broker = fcntl(CORDON_BROKER_FD, F_GETFD) < 0 ? -1 : CORDON_BROKER_FD;
	cordon_load_seccomp(broker);
	if (broker >= 0)
		close(broker);

	sigset_t set, old;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0)
		die("sigprocmask failed");
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		die("signalfd failed");
	int tty = isatty(0);

	pid_t child = fork();
	if (child < 0)
		die("fork failed");
	if (child == 0) {
		setpgid(0, 0);
		if (tty) {
			// Become the terminal's foreground group, so ^C reaches
			// the command and not this init.
			signal(SIGTTOU, SIG_IGN);
			tcsetpgrp(0, getpid());
			signal(SIGTTOU, SIG_DFL);
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		restore_env();
		execvp(argv[first], argv + first);
		int e = errno;
		int code = e == ENOENT ? CORDON_EXIT_NOT_FOUND : CORDON_EXIT_NOT_RUNNABLE;
		char msg[512];
		snprintf(msg, sizeof(msg), "cannot execute %s: %s", argv[first], strerror(e));
		report("exec", code, msg);
		fprintf(stderr, "cordon: %s\n", msg);
		_exit(code);
	}
	setpgid(child, child);
	// From here on the command may run: cordon reads a missing "started"
	// as a failure of this init, never of the command.
	report("started", 0, "-");

	struct pollfd p[2] = {
		{.fd = sfd, .events = POLLIN},
		{.fd = CORDON_LIVENESS_FD, .events = POLLIN},
	};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll failed");
		}
		if (p[1].revents) {
			char b;
			ssize_t r = read(CORDON_LIVENESS_FD, &b, 1);
			if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
				_exit(128 + SIGKILL); // cordon died: end the sandbox
		}
		if (!(p[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD) {
			if (si.ssi_signo != SIGWINCH)
				kill(-child, (int)si.ssi_signo);
			continue;
		}
		int st;
		pid_t w;
		while ((w = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
			if (w != child)
				continue; // an orphan: reaped
			if (WIFSTOPPED(st)) {
				// Nothing in the sandbox can resume a stopped
				// command (^Z at a terminal): continue it rather
				// than hang until the timeout.
				kill(-child, SIGCONT);
				continue;
			}
			// The exit status alone cannot tell `kill -SEGV $$`
			// from `exit 139`: the wait status can.
			if (WIFEXITED(st) || WIFSIGNALED(st))
				dprintf(status_fd, "exited %d\n", st);
			if (WIFEXITED(st))
				_exit(WEXITSTATUS(st));
			if (WIFSIGNALED(st))
				_exit(128 + WTERMSIG(st));
		}
	}
}
