// What the files of the session's PID 1 share: sessionwire_linux.c (status
// records, reading a request, signals), sessioninit_linux.c (PID 1,
// the shims' loop, the requests), sessionshim_linux.c (one exec in a shim:
// spawn, wait, kill the tree) and sessionattrs_linux.c (the attributes a
// command inherits, put back before each exec).

#ifndef CORDON_SESSIONSHIM_H
#define CORDON_SESSIONSHIM_H

#include <signal.h>
#include <stddef.h>

#include "forkproto_linux.h"

// PID 1's signalfd, which a shim closes.
extern int pid1_sfd;

void si_write_status(int fd, const struct cordon_status *st);
void si_fail_status(int fd, int phase, int err);
int si_read_full(int fd, void *buf, size_t n);
int si_stdio_fds(const struct cordon_req *h);
int si_want_fds(const struct cordon_req *h);
int si_recv_header(int sock, struct cordon_req *h, int fds[MAX_FDS]);
void si_catchable(sigset_t *set);
void si_drain_signals(int sfd);

// si_attrs_save records the process attributes a command inherits (once,
// in PID 1); si_attrs_restore puts them back before each exec: 0, or the
// errno of one that cannot be.
void si_attrs_save(void);
int si_attrs_restore(void);

// si_run_exec runs one exec in a shim and reports its status on sock: 1
// when the shim can serve another, 0 when it must exit.
int si_run_exec(const struct cordon_req *h, char *payload, char **argv, char **envp, int fds[MAX_FDS], int sock, int sfd);

#endif
