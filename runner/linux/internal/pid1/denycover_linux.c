//go:build linux && cgo

// The deny cover helper, in C: a constructor that runs before the Go
// runtime starts, because joining a user namespace (setns(CLONE_NEWUSER))
// needs a single-threaded process, and joining a mount namespace one that
// shares no fs_struct, which no Go program is.
//
//   /proc/self/exe cordon-deny-cover
//
// fd 3 is the sandbox's user namespace, fd 4 its mount namespace, fd 5 a
// SOCK_SEQPACKET socket to the supervisor (denywatch_linux.go). The helper
// joins both namespaces (the user namespace only when it is not its own:
// a root run has none), answers 'R', then serves one request per message:
// the device and inode the host sees at a denied sandbox path, and the
// path. It opens the path in the sandbox's root without following any
// symlink, and only when it still names that very file (not a cover that
// is already there, not a later replacement) mounts over it what the build
// mounts over a denied path, read-only, nosuid, nodev and noexec: over a
// file an empty file of mode 0 (every open fails with EACCES, as with the
// build's /dev/null), over a directory an empty tmpfs. The mount lands on
// the descriptor it checked, never on a path resolved again. It exits at EOF.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../../../internal/exitcodes/exitcodes.h"

#define CORDON_DENY_COVER_ARG "cordon-deny-cover"

#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif

#define DC_OPEN_TREE_CLONE 1
#define DC_MOVE_MOUNT_F_EMPTY_PATH 0x04
#define DC_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define DC_FSOPEN_CLOEXEC 1
#define DC_FSCONFIG_SET_STRING 1
#define DC_FSCONFIG_CMD_CREATE 6
#define DC_FSMOUNT_CLOEXEC 1
#define DC_MOUNT_ATTR_RDONLY 0x1
#define DC_MOUNT_ATTR_NOSUID 0x2
#define DC_MOUNT_ATTR_NODEV 0x4
#define DC_MOUNT_ATTR_NOEXEC 0x8
#define DC_RESOLVE_NO_MAGICLINKS 0x02
#define DC_RESOLVE_NO_SYMLINKS 0x04

#define DC_COVER_ATTRS (DC_MOUNT_ATTR_RDONLY | DC_MOUNT_ATTR_NOSUID | DC_MOUNT_ATTR_NODEV | DC_MOUNT_ATTR_NOEXEC)

struct dc_open_how {
	uint64_t flags, mode, resolve;
};

struct dc_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};

// Kept in step with denyCoverRequest and denyCoverReply in denywatch_linux.go.
struct dc_request {
	uint64_t dev, ino;
	char path[4096];
};

enum { DC_COVERED = 0, DC_NOT_THIS = 1, DC_GONE = 2, DC_FAILED = 3 };

struct dc_reply {
	int32_t status, err, step;
};

// Steps named in a failure (denyCoverSteps in denywatch_linux.go).
enum { ST_FSTAT = 1, ST_OPEN_TREE, ST_SETATTR, ST_FSOPEN, ST_FSCONFIG, ST_FSMOUNT, ST_MOVE, ST_OPEN };

static struct dc_reply dc_fail(int step)
{
	struct dc_reply r = {DC_FAILED, errno, step};
	return r;
}

// dc_tmpl is a tmpfs of the helper's own, never attached anywhere, that
// holds one empty file, "null", of mode 0: a file cover is a clone of it.
// The sandbox cannot reach it, so nothing the command does changes what
// covers a file (a root run's command may replace its own /dev/null, and
// a clone of an unlinked node cannot be mounted). An open of the cover
// fails with EACCES (the command has no CAP_DAC_OVERRIDE), a write with
// EROFS or EACCES, as with the build's /dev/null.
static int dc_tmpl = -1;

static int dc_make_template(void)
{
	int fs = (int)syscall(SYS_fsopen, "tmpfs", DC_FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if (syscall(SYS_fsconfig, fs, DC_FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, DC_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		close(fs);
		return -1;
	}
	dc_tmpl = (int)syscall(SYS_fsmount, fs, DC_FSMOUNT_CLOEXEC, DC_MOUNT_ATTR_NOSUID | DC_MOUNT_ATTR_NODEV | DC_MOUNT_ATTR_NOEXEC);
	close(fs);
	if (dc_tmpl < 0)
		return -1;
	int f = openat(dc_tmpl, "null", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0)
		return -1;
	return fchmod(f, 0) == 0 ? close(f) : -1;
}

// dc_file_cover is a clone of the template's file with the cover's
// attributes.
static int dc_file_cover(int *step)
{
	int m = (int)syscall(SYS_open_tree, dc_tmpl, "null", DC_OPEN_TREE_CLONE | O_CLOEXEC);
	if (m < 0) {
		*step = ST_OPEN_TREE;
		return -1;
	}
	struct dc_mount_attr attr = {.attr_set = DC_COVER_ATTRS};
	if (syscall(SYS_mount_setattr, m, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0) {
		int e = errno;
		close(m);
		errno = e;
		*step = ST_SETATTR;
		return -1;
	}
	return m;
}

// dc_dir_cover is a new empty read-only tmpfs, as libcontainer masks a
// directory.
static int dc_dir_cover(int *step)
{
	int fs = (int)syscall(SYS_fsopen, "tmpfs", DC_FSOPEN_CLOEXEC);
	if (fs < 0) {
		*step = ST_FSOPEN;
		return -1;
	}
	if (syscall(SYS_fsconfig, fs, DC_FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, DC_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int e = errno;
		close(fs);
		errno = e;
		*step = ST_FSCONFIG;
		return -1;
	}
	int m = (int)syscall(SYS_fsmount, fs, DC_FSMOUNT_CLOEXEC, DC_COVER_ATTRS);
	int e = errno;
	close(fs);
	errno = e;
	if (m < 0)
		*step = ST_FSMOUNT;
	return m;
}

static struct dc_reply dc_cover(const struct dc_request *req)
{
	struct dc_reply ok = {DC_COVERED, 0, 0}, skip = {DC_NOT_THIS, 0, 0}, gone = {DC_GONE, 0, 0};
	struct dc_open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC, .resolve = DC_RESOLVE_NO_SYMLINKS | DC_RESOLVE_NO_MAGICLINKS};
	int t = (int)syscall(SYS_openat2, AT_FDCWD, req->path, &how, sizeof(how));
	if (t < 0) {
		// Gone, or reached through a symlink (ELOOP): then the path is
		// not where the host's new file is; its own event names it.
		if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EXDEV)
			return gone;
		return dc_fail(ST_OPEN);
	}
	struct stat st;
	if (fstat(t, &st) < 0) {
		struct dc_reply r = dc_fail(ST_FSTAT);
		close(t);
		return r;
	}
	// Another file (a cover already there, or the host's next
	// replacement, whose own event follows), or a symlink, which a mount
	// cannot cover: what it names is decided as that path.
	if ((uint64_t)st.st_dev != req->dev || (uint64_t)st.st_ino != req->ino || S_ISLNK(st.st_mode)) {
		close(t);
		return skip;
	}
	int step = 0;
	int m = S_ISDIR(st.st_mode) ? dc_dir_cover(&step) : dc_file_cover(&step);
	if (m < 0) {
		struct dc_reply r = dc_fail(step);
		close(t);
		return r;
	}
	int rc = (int)syscall(SYS_move_mount, m, "", t, "", DC_MOVE_MOUNT_F_EMPTY_PATH | DC_MOVE_MOUNT_T_EMPTY_PATH);
	int e = errno;
	close(m);
	close(t);
	if (rc < 0) {
		// The host removed or replaced it between the check and the
		// mount: the kernel refuses a mount on an unlinked dentry.
		if (e == ENOENT)
			return gone;
		errno = e;
		return dc_fail(ST_MOVE);
	}
	return ok;
}

__attribute__((constructor)) static void cordon_deny_cover(int argc, char **argv)
{
	struct stat target, self;

	if (argc < 2 || strcmp(argv[1], CORDON_DENY_COVER_ARG) != 0)
		return;
	if (fstat(3, &target) < 0 || stat("/proc/self/ns/user", &self) < 0) {
		perror("cordon-deny-cover: user namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	if ((target.st_ino != self.st_ino || target.st_dev != self.st_dev) && setns(3, CLONE_NEWUSER) < 0) {
		perror("cordon-deny-cover: join the sandbox's user namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	if (setns(4, CLONE_NEWNS) < 0) {
		perror("cordon-deny-cover: join the sandbox's mount namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	close(3);
	close(4);
	if (dc_make_template() < 0) {
		perror("cordon-deny-cover: the cover's tmpfs");
		_exit(CORDON_EXIT_SETUP);
	}
	if (chdir("/") < 0 || send(5, "R", 1, MSG_NOSIGNAL) != 1) {
		perror("cordon-deny-cover: start");
		_exit(CORDON_EXIT_SETUP);
	}
	static struct dc_request req;
	for (;;) {
		memset(&req, 0, sizeof(req));
		ssize_t n = recv(5, &req, sizeof(req) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		if ((size_t)n <= offsetof(struct dc_request, path) || req.path[0] != '/') {
			fputs("cordon-deny-cover: a malformed request\n", stderr);
			_exit(CORDON_EXIT_SETUP);
		}
		struct dc_reply r = dc_cover(&req);
		if (send(5, &r, sizeof(r), MSG_NOSIGNAL) != sizeof(r))
			_exit(0);
	}
}
