//go:build linux && cgo

// The tun helper's namespace join, in C, before the Go runtime starts.
//
// A rootless sandbox's network namespace belongs to the sandbox's user
// namespace, and only a single-threaded process may join a user namespace,
// which a Go process never is. So the supervisor runs
//   /proc/self/exe cordon-net-helper
// with fd 3 = the sandbox's user namespace and fd 4 = its network
// namespace; this constructor joins both (the user namespace only when it
// is not already ours) and returns, and the Go side (HelperMain) creates
// the tun device there and sends it back over fd 5.

#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CORDON_NET_HELPER_ARG "cordon-net-helper"

__attribute__((constructor)) static void cordon_net_helper(int argc, char **argv)
{
	struct stat target, self;

	if (argc < 2 || strcmp(argv[1], CORDON_NET_HELPER_ARG) != 0)
		return;
	if (fstat(3, &target) < 0 || stat("/proc/self/ns/user", &self) < 0) {
		perror("cordon-net-helper: user namespace");
		_exit(125);
	}
	if ((target.st_ino != self.st_ino || target.st_dev != self.st_dev) && setns(3, CLONE_NEWUSER) < 0) {
		perror("cordon-net-helper: join the sandbox's user namespace");
		_exit(125);
	}
	if (setns(4, CLONE_NEWNET) < 0) {
		perror("cordon-net-helper: join the sandbox's network namespace");
		_exit(125);
	}
	close(3);
	close(4);
}
