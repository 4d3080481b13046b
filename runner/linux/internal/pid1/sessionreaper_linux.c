//go:build linux && cgo

// The session reaper's wait, in C: a constructor that runs before the Go
// runtime starts. A session's reaper (sessionreaper_linux.go) spends its
// life waiting on a pipe only the supervisor holds, and nearly always
// hears 'D' (the session was cleaned up) and exits. Waiting here, a reaper
// costs the session's start an exec rather than a Go start-up (its
// runtime, package initialisers and threads competing with the sandbox's
// set-up for the CPUs). On EOF (the supervisor died without closing the
// session) the constructor returns and the Go reaper runs: it reads the
// pipe again, which still says EOF, and removes what was left.

#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>

#define CORDON_REAPER_ARG "cordon-session-reaper"
#define REAPER_CTL_FD 3

__attribute__((constructor)) static void cordon_session_reaper(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 2 || strcmp(argv[1], CORDON_REAPER_ARG) != 0)
		return;
	char b;
	ssize_t r;
	do
		r = read(REAPER_CTL_FD, &b, 1);
	while (r < 0 && errno == EINTR);
	if (r == 1 && b == 'D')
		_exit(0);
}
