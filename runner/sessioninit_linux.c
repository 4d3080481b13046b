//go:build linux && cgo

// cordon's PID 1 for a warm session, in C: a fork server.
//
// The session supervisor starts the sandbox as
//   /proc/self/exe cordon-session-init
// with fd 3 the sandbox end of a unix stream socket pair whose other end
// only the supervisor holds (it is never a path, so nothing in the sandbox
// can connect to it). Like cordon-sandbox-init, this constructor runs
// before the Go runtime and never returns. It makes itself non-dumpable,
// loads the seccomp filter once, writes one ready byte, and then serves:
//
//   EXEC   (header, cwd, argv, env; SCM_RIGHTS: stdin, stdout, stderr and
//          the write end of a status pipe): fork a shim, which becomes a
//          child subreaper, spawns the command (new session, fresh fd
//          table, default signals, the request's env and cwd) and waits.
//          When the command ends the shim kills every process it left
//          behind (orphans reparent to the shim, so setsid and
//          double-forked ones are found) unless the exec was detached, and
//          writes one fixed-size status record to the status pipe.
//   SIGNAL (header): queue a signal to that exec's shim (SIGRTMIN with the
//          signal as value; the shim acts only on values queued by PID 1),
//          which forwards it to the command's process group, or, for
//          CORDON_SIG_KILLTREE, kills the whole tree.
//
// Every exec inherits this process's boundary by fork: mount view, seccomp,
// no_new_privs, capabilities, rlimits, namespaces. Nothing is re-applied.
// PID 1 never writes to the control socket after the ready byte, and the
// supervisor treats every status record as untrusted input. EOF on the
// control socket means the supervisor is gone: PID 1 exits, and the kernel
// kills every process of the PID namespace.

#define _GNU_SOURCE
#include <dirent.h>
#include <linux/close_range.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandboxinit_linux.h"

#define CORDON_SESSION_ARG "cordon-session-init"
#define CTRL_FD 3
// Must match sessionproto_linux.go.
#define REQ_MAGIC 0x58445243u	 // "CRDX"
#define STATUS_MAGIC 0x53445243u // "CRDS"
#define PROTO_VERSION 1
#define REQ_EXEC 1
#define REQ_SIGNAL 2
#define FLAG_DETACH 1u
#define FLAG_TTY 2u
#define MAX_FDS 5
#define CORDON_SIG_KILLTREE (-1)
#define PHASE_RAN 0
#define PHASE_CHDIR 1
#define PHASE_EXEC 2
#define PHASE_SHIM 3
#define MAX_PAYLOAD (8u << 20)
#define MAX_EXECS 4096

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

struct cordon_status {
	uint32_t magic;
	uint32_t version;
	int32_t phase;
	int32_t err;
	int32_t wstatus;
	int32_t killed;
	int64_t utime_us;
	int64_t stime_us;
	int64_t maxrss_kb;
};

_Static_assert(sizeof(struct cordon_req) == 40, "request header layout");
_Static_assert(sizeof(struct cordon_status) == 48, "status layout");

static void sdie(const char *msg)
{
	fprintf(stderr, "cordon: session init: %s\n", msg);
	_exit(125);
}

// The shims of running execs, by exec id.
static struct {
	uint64_t id;
	pid_t pid;
} execs[MAX_EXECS];
static int nexecs;
// PID 1's signalfd, which a shim closes.
static int pid1_sfd = -1;

static void write_status(int fd, const struct cordon_status *st)
{
	ssize_t r;
	do
		r = write(fd, st, sizeof(*st));
	while (r < 0 && errno == EINTR);
}

static void fail_status(int fd, int phase, int err)
{
	struct cordon_status st = {.magic = STATUS_MAGIC, .version = PROTO_VERSION, .phase = phase, .err = err};
	write_status(fd, &st);
}

// read_full reads exactly n bytes; 0 on success.
static int read_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

// want_fds is how many descriptors an EXEC request carries: stdin,
// stdout, stderr and the status pipe, plus a console socket for a TTY.
static int want_fds(const struct cordon_req *h)
{
	return (h->flags & FLAG_TTY) ? 5 : 4;
}

// recv_header reads the request header and the descriptors attached to it.
// Returns the number of descriptors, or -1 on EOF or error.
static int recv_header(int sock, struct cordon_req *h, int fds[MAX_FDS])
{
	char *p = (char *)h;
	size_t got = 0;
	int nfds = 0;
	while (got < sizeof(*h)) {
		char cbuf[CMSG_SPACE(8 * sizeof(int))];
		struct iovec iov = {.iov_base = p + got, .iov_len = sizeof(*h) - got};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
		ssize_t r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			int *in = (int *)CMSG_DATA(c);
			for (int i = 0; i < n; i++) {
				if (nfds < MAX_FDS)
					fds[nfds++] = in[i];
				else
					close(in[i]);
			}
		}
		got += (size_t)r;
	}
	return nfds;
}

// children_of lists up to max live children of pid from /proc (the kernel
// may lack /proc/PID/task/TID/children). Returns the count.
static int children_of(pid_t self, pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = '\0';
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		char *rp = strrchr(buf, ')');
		if (!rp)
			continue;
		char state;
		int ppid;
		if (sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid == self)
			out[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

// kill_tree kills every descendant of this shim and reaps them all. Each
// killed process's children reparent to the shim (a child subreaper), so
// repeating until there are no children left reaches the whole tree,
// setsid'd and double-forked processes included. The command's own status
// is recorded in *wst and *ru when it is reaped here.
static void kill_tree(pid_t cmd, int *cmd_done, int *wst, struct rusage *ru)
{
	siginfo_t info;
	// The common case: the command left nothing behind; skip the /proc scan.
	if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
		return;
	pid_t self = getpid();
	for (;;) {
		pid_t kids[256];
		int n = children_of(self, kids, 256);
		for (int i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		int st;
		struct rusage r;
		pid_t w = wait4(-1, &st, 0, &r);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return; // ECHILD: nothing is left
		}
		if (w == cmd && !*cmd_done) {
			*cmd_done = 1;
			*wst = st;
			*ru = r;
		}
	}
}

// spawn_tty starts a TTY exec's command with fork: in a new session, it
// opens the terminal and makes it its controlling one with TIOCSCTTY. (An
// open without O_NOCTTY would not do: cordon's broker performs the open,
// and a terminal becomes the controlling one of the process that opens
// it.) An exec failure comes back as an errno over a close-on-exec pipe,
// as posix_spawn reports it.
static int spawn_tty(pid_t *pid, char **argv, char **envp, const char *tty)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return errno;
	pid_t c = fork();
	if (c < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (c == 0) {
		close(p[0]);
		int e = 0;
		int fd = -1;
		if (setsid() < 0 || (fd = open(tty, O_RDWR | O_NOCTTY)) < 0 || ioctl(fd, TIOCSCTTY, 0) < 0 ||
		    dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			e = errno;
		if (!e) {
			if (fd > 2)
				close(fd);
			syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
			sigset_t none;
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			extern char **environ;
			environ = envp;
			execvp(argv[0], argv);
			e = errno;
		}
		(void)!write(p[1], &e, sizeof(e));
		_exit(127);
	}
	close(p[1]);
	int e = 0;
	ssize_t r;
	do
		r = read(p[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(p[0]);
	if (r == sizeof(e) && e) {
		waitpid(c, NULL, 0);
		return e;
	}
	*pid = c;
	return 0;
}

// spawn starts the command with posix_spawn (a vfork-style clone: no copy
// of the shim's address space) in a new session, with the request's env,
// stdio as its only descriptors and an empty signal mask (every
// disposition is already the default). The shim has already changed to
// the command's directory. Returns 0 or an errno.
static int spawn(pid_t *pid, char **argv, char **envp, int fds[3], const char *tty)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none;
	sigemptyset(&none);
	if (tty)
		return spawn_tty(pid, argv, envp, tty);
	if (posix_spawn_file_actions_init(&fa) || posix_spawnattr_init(&at))
		return ENOMEM;
	for (int i = 0; i < 3; i++)
		posix_spawn_file_actions_adddup2(&fa, fds[i], i);
	// A fresh fd table: stdio only.
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	extern char **environ;
	environ = envp; // posix_spawnp searches the PATH of the request's env
	int err = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return err;
}

// open_console opens a terminal in the sandbox's devpts for a TTY exec,
// sizes it (size = cols<<16 | rows, or 0), and sends its master to the
// supervisor over sock (SCM_RIGHTS, with the terminal's name), as
// libcontainer's console socket does. Returns the master (kept open until
// the command holds the terminal) or -errno.
static int open_console(int sock, uint32_t size, char *name, size_t n)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, n) != 0) {
		int e = errno;
		close(m);
		return -e;
	}
	if (size) {
		struct winsize ws = {.ws_col = (unsigned short)(size >> 16), .ws_row = (unsigned short)(size & 0xffff)};
		ioctl(m, TIOCSWINSZ, &ws);
	}
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = name, .iov_len = strlen(name)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &m, sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
		int e = errno;
		close(m);
		return -e;
	}
	return m;
}

// shim runs one exec and exits; see the file comment. PID 1's control
// socket and signalfd are closed already.
static void shim(const struct cordon_req *h, char *payload, int fds[MAX_FDS])
{
	int status_fd = fds[3];
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		fail_status(status_fd, PHASE_SHIM, errno);
		_exit(1);
	}
	// Split the payload: cwd, argv..., env... (each NUL-terminated).
	char **argv = calloc(h->nargv + 1, sizeof(char *));
	char **envp = calloc(h->nenv + 1, sizeof(char *));
	if (!argv || !envp) {
		fail_status(status_fd, PHASE_SHIM, ENOMEM);
		_exit(1);
	}
	char *p = payload, *end = payload + h->len;
	const char *cwd = p;
	p += strlen(p) + 1;
	for (uint32_t i = 0; i < h->nargv; i++) {
		if (p >= end) {
			fail_status(status_fd, PHASE_SHIM, EINVAL);
			_exit(1);
		}
		argv[i] = p;
		p += strlen(p) + 1;
	}
	for (uint32_t i = 0; i < h->nenv; i++) {
		if (p >= end) {
			fail_status(status_fd, PHASE_SHIM, EINVAL);
			_exit(1);
		}
		envp[i] = p;
		p += strlen(p) + 1;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGRTMIN);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		fail_status(status_fd, PHASE_SHIM, errno);
		_exit(1);
	}
	if (chdir(cwd) < 0) {
		int e = errno;
		dprintf(fds[2], "cordon: cannot change to directory %s: %s\n", cwd, strerror(e));
		fail_status(status_fd, PHASE_CHDIR, e);
		_exit(0);
	}
	char ttyname[128];
	int master = -1;
	if (h->flags & FLAG_TTY) {
		master = open_console(fds[4], (uint32_t)h->sig, ttyname, sizeof(ttyname));
		if (master < 0) {
			fail_status(status_fd, PHASE_SHIM, -master);
			_exit(0);
		}
	}
	pid_t cmd = 0;
	int err = spawn(&cmd, argv, envp, fds, master >= 0 ? ttyname : NULL);
	if (err && master < 0)
		dprintf(fds[2], "cordon: cannot execute %s: %s\n", argv[0], strerror(err));
	if (err && master >= 0) {
		int sl = open(ttyname, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (sl >= 0) {
			dprintf(sl, "cordon: cannot execute %s: %s\n", argv[0], strerror(err));
			close(sl);
		}
	}
	if (master >= 0)
		close(master);
	if (err) {
		fail_status(status_fd, PHASE_EXEC, err);
		_exit(0);
	}
	for (int i = 0; i < want_fds(h); i++)
		if (i != 3)
			close(fds[i]);
	struct cordon_status st = {.magic = STATUS_MAGIC, .version = PROTO_VERSION, .phase = PHASE_RAN};

	int cmd_done = 0, wst = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	while (!cmd_done) {
		struct signalfd_siginfo si;
		ssize_t r = read(sfd, &si, sizeof(si));
		if (r != sizeof(si))
			continue;
		if (si.ssi_signo == (uint32_t)SIGRTMIN) {
			// PID 1 relays the supervisor's requests this way. The
			// command can forge one (rt_sigqueueinfo lets it claim
			// any sender), but all it could ask for is to kill or
			// signal its own processes, which it can do anyway; the
			// supervisor never trusts the `killed` field.
			if (si.ssi_pid != 1 || si.ssi_code != SI_QUEUE)
				continue;
			if (si.ssi_int == CORDON_SIG_KILLTREE) {
				st.killed = 1;
				kill_tree(cmd, &cmd_done, &wst, &ru);
			} else if (si.ssi_int > 0 && si.ssi_int < NSIG) {
				kill(-cmd, si.ssi_int);
			}
			continue;
		}
		int s;
		struct rusage r2;
		pid_t w;
		while ((w = wait4(-1, &s, WNOHANG | WUNTRACED, &r2)) > 0) {
			if (WIFSTOPPED(s)) {
				// Nothing in the sandbox can resume a stopped process
				// of this exec (no terminal, no job control): continue
				// it rather than hang until the timeout, as the cold
				// init does.
				kill(w, SIGCONT);
				continue;
			}
			if (w == cmd) {
				cmd_done = 1;
				wst = s;
				ru = r2;
			}
		}
	}
	if (!(h->flags & FLAG_DETACH))
		kill_tree(cmd, &cmd_done, &wst, &ru);
	st.wstatus = wst;
	st.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
	st.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	st.maxrss_kb = ru.ru_maxrss;
	write_status(status_fd, &st);
	// Detached processes reparent to PID 1, which reaps them.
	_exit(0);
}

// A shim forked ahead of time, waiting for its request on a socket pair:
// an exec then costs PID 1 a sendmsg instead of a fork, and the next spare
// is forked while the command runs.
static struct {
	pid_t pid;
	int sock;
} spare = {-1, -1};

static void spare_wait(int sock)
{
	struct cordon_req h;
	int fds[MAX_FDS];
	int nfds = recv_header(sock, &h, fds);
	if (nfds != want_fds(&h) || h.len > MAX_PAYLOAD)
		_exit(0);
	char *payload = malloc(h.len + 1);
	if (!payload || read_full(sock, payload, h.len) < 0)
		_exit(0);
	payload[h.len] = '\0';
	close(sock);
	shim(&h, payload, fds);
}

static void make_spare(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	pid_t pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		close(CTRL_FD);
		close(pid1_sfd);
		close(sv[0]);
		spare_wait(sv[1]);
	}
	close(sv[1]);
	spare.pid = pid;
	spare.sock = sv[0];
}

// give_to_spare hands a request to the spare shim and returns its pid, or
// -1 when there is none (or it died: a command can kill it), and the
// caller forks a shim instead.
static pid_t give_to_spare(const struct cordon_req *h, char *payload, int fds[MAX_FDS], int nfds)
{
	if (spare.pid < 0)
		return -1;
	char cbuf[CMSG_SPACE(MAX_FDS * sizeof(int))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov[2] = {{.iov_base = (void *)h, .iov_len = sizeof(*h)}, {.iov_base = payload, .iov_len = h->len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	size_t total = sizeof(*h) + h->len, sent = 0;
	ssize_t w;
	do
		w = sendmsg(spare.sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	pid_t pid = spare.pid;
	if (w > 0) {
		sent = (size_t)w;
		// The rest of a large payload, without descriptors.
		while (sent < total) {
			const char *p = sent < sizeof(*h) ? (const char *)h + sent : payload + (sent - sizeof(*h));
			size_t n = sent < sizeof(*h) ? sizeof(*h) - sent : total - sent;
			w = send(spare.sock, p, n, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			sent += (size_t)w;
		}
	}
	close(spare.sock);
	spare.pid = -1;
	spare.sock = -1;
	if (sent < total) {
		kill(pid, SIGKILL);
		return -1;
	}
	return pid;
}

static void handle_exec(struct cordon_req *h, int fds[MAX_FDS], int nfds)
{
	if (nfds != want_fds(h)) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		// Drain the payload: the stream must stay in step.
		char buf[4096];
		uint32_t left = h->len;
		while (left > 0) {
			size_t k = left < sizeof(buf) ? left : sizeof(buf);
			if (read_full(CTRL_FD, buf, k) < 0)
				_exit(0);
			left -= (uint32_t)k;
		}
		return;
	}
	char *payload = malloc(h->len + 1);
	if (!payload || read_full(CTRL_FD, payload, h->len) < 0) {
		if (!payload)
			fail_status(fds[3], PHASE_SHIM, ENOMEM);
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (payload)
			_exit(0); // the supervisor went away mid-request
		return;
	}
	payload[h->len] = '\0';
	if (nexecs >= MAX_EXECS) {
		fail_status(fds[3], PHASE_SHIM, EAGAIN);
	} else {
		pid_t pid = give_to_spare(h, payload, fds, nfds);
		if (pid < 0) {
			pid = fork();
			if (pid == 0) {
				close(CTRL_FD);
				close(pid1_sfd);
				shim(h, payload, fds);
			}
		}
		if (pid < 0) {
			fail_status(fds[3], PHASE_SHIM, errno);
		} else {
			execs[nexecs].id = h->id;
			execs[nexecs].pid = pid;
			nexecs++;
		}
	}
	free(payload);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (spare.pid < 0)
		make_spare();
}

static void handle_signal(const struct cordon_req *h)
{
	for (int i = 0; i < nexecs; i++) {
		if (execs[i].id != h->id)
			continue;
		union sigval v = {.sival_int = h->sig};
		sigqueue(execs[i].pid, SIGRTMIN, v);
		return;
	}
}

static void forget(pid_t pid)
{
	for (int i = 0; i < nexecs; i++) {
		if (execs[i].pid == pid) {
			execs[i] = execs[--nexecs];
			return;
		}
	}
}

__attribute__((constructor)) static void cordon_session_init(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 2 || strcmp(argv[1], CORDON_SESSION_ARG) != 0)
		return;
	if (getpid() != 1)
		sdie(CORDON_SESSION_ARG " runs only as PID 1 inside a sandbox");
	// Not dumpable, and neither are the shims forked from it: a command
	// (same uid) can neither open their descriptors through /proc (the
	// control socket, the status pipes) nor ptrace them.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sdie("cannot make the session init non-dumpable");
	if (fcntl(CTRL_FD, F_SETFD, FD_CLOEXEC) < 0)
		sdie("no control socket from cordon");
	// The listener, when the filter has one, goes to the supervisor's
	// broker over the control socket, before "R".
	cordon_load_seccomp(CTRL_FD);

	// Default dispositions for every signal, once: the commands forked
	// from here inherit them and need not reset each.
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigset_t set;
	sigfillset(&set);
	sigdelset(&set, SIGKILL);
	sigdelset(&set, SIGSTOP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		sdie("sigprocmask failed");
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC);
	if (sfd < 0)
		sdie("signalfd failed");
	pid1_sfd = sfd;
	make_spare();
	if (write(CTRL_FD, "R", 1) != 1)
		_exit(0);

	struct pollfd p[2] = {
		{.fd = sfd, .events = POLLIN},
		{.fd = CTRL_FD, .events = POLLIN},
	};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			sdie("poll failed");
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			(void)!read(sfd, &si, sizeof(si));
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
				if (WIFSTOPPED(st)) {
					// A command stopped its shim (same uid): resume it,
					// or its exec would hang.
					kill(w, SIGCONT);
					continue;
				}
				forget(w); // a shim, or an orphan (detached or stray)
				if (w == spare.pid) {
					close(spare.sock);
					spare.pid = spare.sock = -1;
				}
			}
		}
		if (!p[1].revents)
			continue;
		struct cordon_req h;
		int fds[MAX_FDS];
		int nfds = recv_header(CTRL_FD, &h, fds);
		if (nfds < 0)
			_exit(0); // the supervisor is gone: end the sandbox
		if (h.magic != REQ_MAGIC || h.version != PROTO_VERSION || h.len > MAX_PAYLOAD)
			sdie("bad request from the supervisor");
		if (h.type == REQ_EXEC) {
			handle_exec(&h, fds, nfds);
		} else {
			for (int i = 0; i < nfds; i++)
				close(fds[i]);
			if (h.type == REQ_SIGNAL)
				handle_signal(&h);
		}
	}
}
