//go:build linux && cgo

// One exec in a session's shim (see sessioninit_linux.c for the protocol
// and the shim's loop): the command spawned in its own session with the
// request's descriptors, waited for, and every process it left killed.
// The attributes a command can lower on its shim are put back before the
// next by sessionattrs_linux.c.

#define _GNU_SOURCE
#include <dirent.h>
#include <linux/close_range.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
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

#include "../../../../internal/exitcodes/exitcodes.h"
#include "forkproto_linux.h"
#include "sandboxinit_linux.h"
#include "sessionshim_linux.h"

// children_of lists up to max live children of pid from /proc (the kernel
// may lack /proc/PID/task/TID/children). Returns the count, or -1 when the
// scan could not be made whole (no descriptor or memory left: limits a
// command lowered on the shim), so that a child is never missed silently.
static int children_of(pid_t self, pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char path[64], buf[512];
		if ((size_t)snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name) >= sizeof(path))
			continue; // not a pid
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOMEM)) {
			closedir(d);
			return -1;
		}
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
// is recorded in *wst and *ru when it is reaped here. It returns 0, or the
// errno of attributes the command lowered on this shim that cannot be put
// back: the caller then fails the exec, which ends the session and with it
// the tree.
static int kill_tree(pid_t cmd, int *cmd_done, int *wst, struct rusage *ru)
{
	siginfo_t info;
	// The common case: the command left nothing behind; skip the /proc scan.
	if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
		return 0;
	// The command may have lowered this shim's limits (prlimit --pid
	// $PPID: a soft RLIMIT_NOFILE of 3, RLIMIT_AS): the scan would find
	// nothing and the wait below block until the tree ends by itself.
	int ae = si_attrs_restore();
	if (ae)
		return ae;
	pid_t self = getpid();
	// A process of the tree may keep lowering the shim's limits while
	// it is scanned for: a failed scan puts them back and scans again,
	// and a wait blocks only for processes just killed. What does not
	// settle within about 5 s fails the exec (the session ends, and the
	// tree with it).
	int failed = 0, idle = 0;
	for (;;) {
		pid_t kids[256];
		int n = children_of(self, kids, 256);
		if (n < 0) {
			if ((ae = si_attrs_restore()))
				return ae;
			if (++failed > 1000)
				return EMFILE;
			usleep(1000);
			continue;
		}
		for (int i = 0; i < n; i++)
			kill(kids[i], SIGKILL);
		int st;
		struct rusage r;
		pid_t w = wait4(-1, &st, n > 0 ? 0 : WNOHANG, &r);
		if (w == 0) {
			// A child the scan did not see (reparented just after it).
			if (++idle > 5000)
				return EBUSY;
			usleep(1000);
			continue;
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 0; // ECHILD: nothing is left
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
		_exit(CORDON_EXIT_NOT_FOUND);
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

// What vspawn's child needs: the command, the request's env and stdio, and
// where it puts the errno of a failed exec.
struct vspawn_args {
	char **argv, **envp;
	int *fds;
	int err;
};

// vspawn_exec is execvpe without the C library's fallback to /bin/sh for
// a file that is not a valid executable (as posix_spawnp does): the PATH
// of the request's env (default "/bin:/usr/bin"), an empty element being
// the working directory, and the error glibc would give.
static int vspawn_exec(char *file, char **argv, char **envp)
{
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		return errno;
	}
	const char *path = "/bin:/usr/bin";
	for (char **e = envp; *e; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	size_t fl = strlen(file);
	int err = ENOENT, eacces = 0;
	char buf[4096];
	for (const char *p = path;; p++) {
		const char *c = strchrnul(p, ':');
		size_t dl = (size_t)(c - p);
		if (dl + 1 + fl + 1 <= sizeof(buf)) {
			memcpy(buf, p, dl);
			size_t k = dl;
			if (k > 0)
				buf[k++] = '/';
			memcpy(buf + k, file, fl + 1);
			execve(buf, argv, envp);
			err = errno;
			if (err == EACCES)
				eacces = 1;
			else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ENODEV && err != ETIMEDOUT)
				return err;
		}
		p = c;
		if (!*p)
			break;
	}
	return eacces ? EACCES : err;
}

// vspawn_child runs in the clone that shares the shim's memory until it
// execs: a new session, stdio from the request and no other descriptor, an
// empty signal mask (every signal is blocked in the shim, and every
// disposition is already the default: the shim never sets a handler), and
// the command. A failure is left in the arguments, and it exits 127.
static int vspawn_child(void *arg)
{
	struct vspawn_args *a = arg;
	sigset_t none;
	sigemptyset(&none);
	if (setsid() < 0)
		goto fail;
	for (int i = 0; i < 3; i++) {
		if (a->fds[i] == i ? fcntl(i, F_SETFD, 0) < 0 : dup2(a->fds[i], i) < 0)
			goto fail;
	}
	if (syscall(SYS_close_range, 3, ~0U, 0) < 0) {
		// A kernel before 5.9: each descriptor the limit allows.
		struct rlimit rl;
		if (errno != ENOSYS || getrlimit(RLIMIT_NOFILE, &rl) < 0)
			goto fail;
		for (rlim_t fd = 3; fd < rl.rlim_cur && fd < (1u << 20); fd++)
			close((int)fd);
	}
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
		goto fail;
	a->err = vspawn_exec(a->argv[0], a->argv, a->envp);
	_exit(CORDON_EXIT_NOT_FOUND);
fail:
	a->err = errno;
	_exit(CORDON_EXIT_NOT_FOUND);
}

// The child's stack: the shim is one thread, and the child runs only until
// it execs (vfork), so one will do.
static char vspawn_stack[64 << 10] __attribute__((aligned(16)));

// spawn starts the command as posix_spawnp would, with a vfork-style clone
// (no copy of the shim's address space, the shim suspended until the
// command execs) in a new session, with the request's env, stdio as its
// only descriptors and an empty signal mask. It is its own because
// posix_spawn's child resets the handler of every blocked signal (two
// system calls for each of the 64, where the shim has blocked them all and
// set none) and its file actions each ask for the descriptor limit. The
// shim has already changed to the command's directory. Returns 0 or an
// errno.
static int spawn(pid_t *pid, char **argv, char **envp, int fds[3], const char *tty)
{
	if (tty)
		return spawn_tty(pid, argv, envp, tty);
	struct vspawn_args a = {.argv = argv, .envp = envp, .fds = fds, .err = 0};
	pid_t p = clone(vspawn_child, vspawn_stack + sizeof(vspawn_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	if (p < 0)
		return errno;
	if (a.err) {
		// The child has exited: reaped here, it never reaches the wait.
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
		return a.err;
	}
	*pid = p;
	return 0;
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

// fail_exec reports a failure before the command ran, closes the exec's
// descriptors, and returns 0: the shim then exits rather than serve
// another exec.
static int fail_exec(int sock, int phase, int err, const struct cordon_req *h, int fds[MAX_FDS])
{
	si_fail_status(sock, phase, err);
	for (int i = 0; i < si_want_fds(h); i++)
		close(fds[i]);
	return 0;
}

// si_run_exec runs one exec (see the file comment) and reports its status on
// sock. sfd is the shim's signalfd (every si_catchable signal, SIGCHLD the
// one that counts). It returns 1 when the
// shim is left as it was before the exec (no process of it left, nothing
// of the exec held), so that it can serve another, which it then says in
// the status record; 0 when it must exit.
int si_run_exec(const struct cordon_req *h, char *payload, char **argv, char **envp, int fds[MAX_FDS], int sock,
		    int sfd)
{
	// Split the payload: cwd, argv..., env... (each NUL-terminated).
	char *p = payload, *end = payload + h->len;
	const char *cwd = p;
	p += strlen(p) + 1;
	for (uint32_t i = 0; i < h->nargv; i++) {
		if (p >= end)
			return fail_exec(sock, PHASE_SHIM, EINVAL, h, fds);
		argv[i] = p;
		p += strlen(p) + 1;
	}
	for (uint32_t i = 0; i < h->nenv; i++) {
		if (p >= end)
			return fail_exec(sock, PHASE_SHIM, EINVAL, h, fds);
		envp[i] = p;
		p += strlen(p) + 1;
	}
	argv[h->nargv] = NULL;
	envp[h->nenv] = NULL;
	int ae = si_attrs_restore();
	if (ae)
		return fail_exec(sock, PHASE_ATTRS, ae, h, fds);
	if (chdir(cwd) < 0) {
		int e = errno;
		dprintf(fds[2], "cordon: cannot change to directory %s: %s\n", cwd, strerror(e));
		return fail_exec(sock, PHASE_CHDIR, e, h, fds);
	}
	// With FLAG_CGROUP the shim moves itself into the exec's leaf before
	// it spawns the command, so the command and all it forks are charged
	// there, and back home once they are gone.
	int leaf = -1, home = -1;
	if (h->flags & FLAG_CGROUP) {
		leaf = fds[si_stdio_fds(h)];
		home = fds[si_stdio_fds(h) + 1];
		if (write(leaf, "0", 1) != 1)
			return fail_exec(sock, PHASE_SHIM, errno, h, fds);
	}
	char ttyname[128];
	int master = -1;
	if (h->flags & FLAG_TTY) {
		master = open_console(fds[3], (uint32_t)h->sig, ttyname, sizeof(ttyname));
		if (master < 0)
			return fail_exec(sock, PHASE_SHIM, -master, h, fds);
	}
	pid_t cmd = 0;
	extern char **environ;
	char **saved = environ;
	int err = spawn(&cmd, argv, envp, fds, master >= 0 ? ttyname : NULL);
	environ = saved; // envp lives in the payload, freed after the exec
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
	if (err)
		return fail_exec(sock, PHASE_EXEC, err, h, fds);
	for (int i = 0; i < si_stdio_fds(h); i++)
		close(fds[i]);
	if (leaf >= 0)
		close(leaf);
	struct cordon_status st = {.magic = STATUS_MAGIC, .version = PROTO_VERSION, .phase = PHASE_RAN};

	int cmd_done = 0, wst = 0, gone = 0, attrs_err = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
	while (!cmd_done) {
		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[1].revents) {
			// Only the supervisor holds the other end of this socket: a
			// signal request, or EOF when it gave up on the exec (or is
			// gone), which kills the tree as a timeout does.
			struct cordon_req q;
			int ok = si_read_full(sock, &q, sizeof(q)) == 0 && q.magic == REQ_MAGIC &&
				 q.version == PROTO_VERSION && q.type == REQ_SIGNAL;
			if (!ok || q.sig == CORDON_SIG_KILLTREE) {
				if (!ok) {
					pf[1].fd = -1;
					gone = 1;
				}
				st.flags |= STATUS_KILLED;
				if ((attrs_err = kill_tree(cmd, &cmd_done, &wst, &ru)))
					break;
			} else if (q.sig > 0 && q.sig < NSIG) {
				kill(-cmd, q.sig);
			}
			continue;
		}
		if (!pf[0].revents)
			continue;
		si_drain_signals(sfd);
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
	// Detached processes stay this shim's children, so it does not serve
	// again: when it exits they reparent to PID 1, which reaps them.
	int again = !(h->flags & (FLAG_DETACH | FLAG_TTY)) && !gone;
	if (!attrs_err && !(h->flags & FLAG_DETACH))
		attrs_err = kill_tree(cmd, &cmd_done, &wst, &ru);
	if (attrs_err) {
		st.phase = PHASE_ATTRS;
		st.err = attrs_err;
		again = 0;
	}
	// Hold no directory of the exec's while idle, and wait home: out of
	// the leaf, which the supervisor removes.
	if (again && chdir("/") < 0)
		again = 0;
	if (again && home >= 0 && write(home, "0", 1) != 1)
		again = 0;
	if (home >= 0)
		close(home);
	if (again)
		st.flags |= STATUS_AGAIN;
	st.wstatus = wst;
	st.utime_us = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
	st.stime_us = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
	st.maxrss_kb = ru.ru_maxrss;
	si_write_status(sock, &st);
	return again;
}
