// The session PID 1's wire helpers, shared by PID 1 and its shims
// (sessioninit_linux.c) and by one exec in a shim (sessionshim_linux.c):
// status records, reading a request and its descriptors, the signals a
// shim catches. They call nothing of either file, so the two depend on
// this one and never on each other.

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

int pid1_sfd = -1;

void si_write_status(int fd, const struct cordon_status *st)
{
	ssize_t r;
	do
		r = write(fd, st, sizeof(*st));
	while (r < 0 && errno == EINTR);
}

void si_fail_status(int fd, int phase, int err)
{
	struct cordon_status st = {.magic = STATUS_MAGIC, .version = PROTO_VERSION, .phase = phase, .err = err};
	si_write_status(fd, &st);
}

// si_read_full reads exactly n bytes; 0 on success.
int si_read_full(int fd, void *buf, size_t n)
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

// si_stdio_fds is how many of an EXEC request's descriptors are the
// command's: stdin, stdout and stderr, plus a console socket for a TTY.
int si_stdio_fds(const struct cordon_req *h)
{
	return (h->flags & FLAG_TTY) ? 4 : 3;
}

// si_want_fds is how many descriptors an EXEC request carries: si_stdio_fds,
// then, with FLAG_CGROUP, the exec's leaf cgroup.procs and the shims'
// home cgroup.procs (both opened by the supervisor, whose credentials
// the kernel checks a migration against).
int si_want_fds(const struct cordon_req *h)
{
	return si_stdio_fds(h) + ((h->flags & FLAG_CGROUP) ? 2 : 0);
}

// si_recv_header reads the request header and the descriptors attached to it.
// Returns the number of descriptors, or -1 on EOF or error.
int si_recv_header(int sock, struct cordon_req *h, int fds[MAX_FDS])
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


// si_catchable fills set with every signal but SIGKILL and SIGSTOP: all of
// them are blocked in PID 1 and the shims (the shims inherit PID 1's
// mask) and read from their signalfd, which covers the same set.
void si_catchable(sigset_t *set)
{
	sigfillset(set);
	sigdelset(set, SIGKILL);
	sigdelset(set, SIGSTOP);
}

// si_drain_signals reads and drops every signal waiting on sfd (non-blocking).
// A blocked signal nobody reads stays queued, charged to a user: a command
// (same uid) that sent PID 1 or a shim real-time signals would fill the
// user's RLIMIT_SIGPENDING on the host for as long as the session lived. Read at once, they cost nothing. Only SIGCHLD means
// anything here, and its waiters call waitpid after a drain anyway.
void si_drain_signals(int sfd)
{
	struct signalfd_siginfo si[16];
	while (read(sfd, si, sizeof(si)) > 0)
		;
}
