//go:build linux && cgo

// cordon's PID 1 for a warm session, in C: a fork server.
//
// The session supervisor starts the sandbox as
//   /proc/self/exe cordon-session-init
// with fd 3 the sandbox end of a unix stream socket pair whose other end
// only the supervisor holds (it is never a path, so nothing in the sandbox
// can connect to it). Like cordon-sandbox-init, this constructor runs
// before the Go runtime and never returns. It makes itself non-dumpable,
// loads the seccomp filter once, writes one ready byte, and then serves
// one request:
//
//   SPARE  (header; SCM_RIGHTS: one to five unix stream sockets, made by
//          the supervisor, which keeps their other ends): fork one shim
//          per socket. A shim waits on its socket for one exec, so an exec
//          never waits for PID 1: the supervisor holds a few shims ahead
//          and sends each exec straight to one, while PID 1 forks the next.
//
// A shim's socket carries, from the supervisor:
//
//   EXEC   (header, cwd, argv, env; SCM_RIGHTS: stdin, stdout, stderr, and
//          for a TTY exec a console socket): the shim becomes a child
//          subreaper, spawns the command (new session, fresh fd table,
//          default signals, the request's env and cwd) and waits. When the
//          command ends the shim kills every process it left behind
//          (orphans reparent to the shim, so setsid and double-forked ones
//          are found) unless the exec was detached, writes one fixed-size
//          status record back on the socket, and exits.
//   SIGNAL (header): forward a signal to the command's process group, or,
//          for CORDON_SIG_KILLTREE, kill the whole tree. EOF (the
//          supervisor gave up on the exec, or is gone) kills the tree too.
//
// Every exec inherits this process's boundary by fork: mount view, seccomp,
// no_new_privs, capabilities, rlimits, namespaces. Nothing is re-applied.
// PID 1 never writes to the control socket after the ready byte, and the
// supervisor treats every status record as untrusted input. EOF on the
// control socket means the supervisor is gone: PID 1 exits, and the kernel
// kills every process of the PID namespace.
//
// This file holds PID 1 and the shims' loop (the wire helpers are in
// sessionwire_linux.c); one
// exec in a shim is sessionshim_linux.c's, the attributes put back before
// each exec sessionattrs_linux.c's.

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

static void sdie(const char *msg)
{
	fprintf(stderr, "cordon: session init: %s\n", msg);
	_exit(CORDON_EXIT_SETUP);
}

// shim is a process forked from PID 1 ahead of its first exec. It waits
// on its socket for an EXEC request and runs it; when that left nothing
// behind it waits for the next, so a warm exec costs no fork of a shim
// and no exit. It exits on EOF (the supervisor has enough spares, or is
// gone) or after an exec it cannot come back clean from.
static void shim(int sock)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		_exit(1);
	sigset_t set;
	si_catchable(&set);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		_exit(1);
	for (;;) {
		// Idle: wait for the next request, dropping what signals come.
		struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			_exit(0);
		if (pf[0].revents)
			si_drain_signals(sfd);
		if (!pf[1].revents)
			continue;
		// Before the request is read: a lowered RLIMIT_NOFILE would
		// drop the descriptors it carries. What cannot be put back
		// is said in a status record, unasked, and the shim exits.
		int ae = si_attrs_restore();
		if (ae) {
			si_fail_status(sock, PHASE_ATTRS, ae);
			_exit(0);
		}
		struct cordon_req h;
		int fds[MAX_FDS];
		int nfds = si_recv_header(sock, &h, fds);
		if (nfds < 0 || h.magic != REQ_MAGIC || h.version != PROTO_VERSION || h.type != REQ_EXEC ||
		    nfds != si_want_fds(&h) || h.len > MAX_PAYLOAD || h.nargv == 0)
			_exit(0);
		// Each string takes a byte at least; argv and envp end in NULL.
		char *payload = malloc(h.len + 1);
		char **argv = h.nargv <= h.len ? calloc(h.nargv + 1, sizeof(char *)) : NULL;
		char **envp = h.nenv <= h.len ? calloc(h.nenv + 1, sizeof(char *)) : NULL;
		if (!payload || !argv || !envp || si_read_full(sock, payload, h.len) < 0)
			_exit(0);
		payload[h.len] = '\0';
		int again = si_run_exec(&h, payload, argv, envp, fds, sock, sfd);
		free(payload);
		free(argv);
		free(envp);
		if (!again)
			_exit(0);
	}
}

// handle_spare forks one shim per socket of a SPARE request. A shim keeps
// its own socket only: the control socket, PID 1's signalfd and the
// other shims' sockets are closed in it, and PID 1 keeps none of them.
static void handle_spare(int fds[MAX_FDS], int nfds)
{
	for (int i = 0; i < nfds; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			close(CTRL_FD);
			close(pid1_sfd);
			for (int j = 0; j < nfds; j++)
				if (j != i)
					close(fds[j]);
			shim(fds[i]);
		}
		// A failed fork (the pids limit) is said on the socket: the
		// exec the supervisor sends there fails alone, typed, and the
		// session goes on.
		if (pid < 0)
			si_fail_status(fds[i], PHASE_SHIM, errno);
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
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
	// control socket, the shims' sockets) nor ptrace them.
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		sdie("cannot make the session init non-dumpable");
	if (fcntl(CTRL_FD, F_SETFD, FD_CLOEXEC) < 0)
		sdie("no control socket from cordon");
	// The listener, when the filter has one, goes to the supervisor's
	// broker over the control socket, before "R".
	cordon_load_seccomp(CTRL_FD);
	si_attrs_save();

	// Default dispositions for every signal, once: the commands forked
	// from here inherit them and need not reset each.
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigset_t set;
	si_catchable(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		sdie("sigprocmask failed");
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		sdie("signalfd failed");
	pid1_sfd = sfd;
	if (write(CTRL_FD, &(char){CTRL_READY}, 1) != 1)
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
			si_drain_signals(sfd);
			int st;
			pid_t w;
			while ((w = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
				if (WIFSTOPPED(st)) {
					// A command stopped its shim (same uid): resume it,
					// or its exec would hang.
					kill(w, SIGCONT);
					continue;
				}
				// Reaped: a shim, or an orphan (detached or stray).
			}
		}
		if (!p[1].revents)
			continue;
		// PID 1's own attributes too, before the request's descriptors
		// and the forks that inherit them. What cannot be put back ends
		// the session: the supervisor reads why from the byte.
		if (si_attrs_restore()) {
			(void)!write(CTRL_FD, &(char){CTRL_ABORT}, 1);
			_exit(0);
		}
		struct cordon_req h;
		int fds[MAX_FDS];
		int nfds = si_recv_header(CTRL_FD, &h, fds);
		if (nfds < 0)
			_exit(0); // the supervisor is gone: end the sandbox
		if (h.magic != REQ_MAGIC || h.version != PROTO_VERSION || h.type != REQ_SPARE || h.len != 0)
			sdie("bad request from the supervisor");
		handle_spare(fds, nfds);
	}
}
