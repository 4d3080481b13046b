//go:build linux && cgo

// `cordon session start` forks its supervisor here, before the Go runtime
// starts, rather than starting `cordon session serve` from Go: the start
// then costs one Go start-up (the supervisor's), not two. The parent stays
// in C: it waits on a pipe for the supervisor's report ("CODE\n", then
// text for stderr), writes the text, and exits with the code. The child
// (the supervisor) leaves the caller's session and stdin, and goes on to
// Go, which finds the pipe's write end in cordon_session_ready_fd; it
// prints the session's name to the caller's stdout and lets go of the
// caller's stdout and stderr once the sandbox is ready (or failed).

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "execproto_linux.h" // CORDON_EXIT_SETUP

// The supervisor's end of the ready pipe, or -1 when this process is not
// a supervisor forked here.
int cordon_session_ready_fd = -1;

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

__attribute__((constructor)) static void cordon_session_start(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 3 || strcmp(argv[1], "session") != 0 || strcmp(argv[2], "start") != 0)
		return;
	for (int i = 3; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "-help") == 0 || strcmp(argv[i], "--help") == 0)
			return; // Go prints the usage
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return; // Go starts the supervisor as a process of its own
	// Above stdio, which the child replaces (a caller may have closed it).
	for (int i = 0; i < 2; i++) {
		if (p[i] < 3) {
			int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
			close(p[i]);
			p[i] = fd;
		}
	}
	if (p[0] < 0 || p[1] < 0)
		_exit(CORDON_EXIT_SETUP);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		setsid();
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			close(null);
		}
		cordon_session_ready_fd = p[1];
		return;
	}
	close(p[1]);
	char buf[4096];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(p[0], buf + n, sizeof(buf) - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (n += (size_t)r) == sizeof(buf) - 1)
			break;
	}
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	char *end = NULL;
	long code = nl ? strtol(buf, &end, 10) : -1;
	if (!nl || end != nl || code < 0 || code > 255) {
		static const char msg[] = "cordon: the session supervisor exited before the sandbox was ready\n";
		write_all(2, msg, sizeof(msg) - 1);
		_exit(CORDON_EXIT_SETUP);
	}
	write_all(2, nl + 1, strlen(nl + 1));
	_exit((int)code);
}
