// notifyfloor: the least a seccomp user-notification broker can cost.
//
//	notifyfloor [-n | -c] [-a] [-k] CMD [ARG...]
//
// Runs CMD under a seccomp filter that sends to a listener exactly the
// calls cordon's broker takes (internal/broker.Syscalls(): open and openat
// when a flag may write, the other calls always), with the synchronous
// hand-over cordon uses (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP). The listener
// does no work at all: it answers every notification with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE at once, so the kernel runs the call
// itself. What CMD then costs above a plain run is the round trips alone,
// with no path resolution, no decision and no call made on the caller's
// behalf: a floor under any broker built on user notification.
// With -c only the calls that make a name are notified (open and openat
// with a write flag, creat, mkdir, mkdirat): one round trip per file for
// untar, a broker that left metadata calls (fchmod, fchown, utimensat) in
// the kernel. With -n the filter allows everything and nothing is
// notified (the same process structure, for the baseline). Prints the notification count on
// With -a an open is answered as cordon's broker answers it: the listener
// opens a file itself (/dev/null) and installs it in the caller
// (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND), which wakes the
// caller and then waits for it, where CONTINUE hands the CPU over at once.
// With -k a second thread at nice 19 spins while calls flow (until 250 us
// after the last one), as internal/awake's keeper does for the broker: on a
// host whose idle CPUs halt, -a costs the wake-up of a halted CPU twice per
// call, and -a -k does not.
// stderr. hack/bench.d/notifyfloor.sh times it.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>
#include <fcntl.h>
#include <poll.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef __x86_64__
/* The filter names system calls by their x86_64 numbers (open, creat and
 * mkdir have no equivalent on arm64). */
#error "notifyfloor is amd64 only"
#endif

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

// The calls cordon's broker takes, but open and openat (decided by flag).
static const int always[] = {
	SYS_bind, SYS_chmod, SYS_chown, SYS_creat, SYS_fchmod, SYS_fchmodat,
#ifdef SYS_fchmodat2
	SYS_fchmodat2,
#endif
	SYS_fchown, SYS_fchownat, SYS_fremovexattr, SYS_fsetxattr, SYS_futimesat, SYS_lchown, SYS_link,
	SYS_linkat, SYS_lremovexattr, SYS_lsetxattr, SYS_mkdir, SYS_mkdirat, SYS_mknod, SYS_mknodat,
	SYS_removexattr, SYS_rename, SYS_renameat, SYS_renameat2, SYS_rmdir, SYS_setxattr, SYS_symlink,
	SYS_symlinkat, SYS_truncate, SYS_unlink, SYS_unlinkat, SYS_utime, SYS_utimensat, SYS_utimes,
};

// With -c, only these besides open and openat.
static const int creates[] = {SYS_creat, SYS_mkdir, SYS_mkdirat};

#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)

static int install(int notify, int only_creates)
{
	const int *list = only_creates ? creates : always;
	struct sock_filter f[128];
	int n = 0;
	unsigned ret = notify ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
	int N = only_creates ? (int)(sizeof(creates) / sizeof(creates[0])) : (int)(sizeof(always) / sizeof(always[0]));
	// Classic BPF jumps only forward: load nr; open and openat to their
	// flag checks; the list; the two flag checks; allow; notify.
	int L_open = 6 + N, L_openat = L_open + 2, L_allow = L_openat + 2, L_notify = L_allow + 1;
#define OFF(i, t) ((t) - ((i) + 1))
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, OFF(2, L_open), 0, 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, OFF(4, L_openat), 0, 0);
	for (int i = 0; i < N; i++)
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, list[i], OFF(5 + i, L_notify), 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, OFF(5 + N, L_allow), 0, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, WRITE_FLAGS, OFF(L_open + 1, L_notify), OFF(L_open + 1, L_allow));
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2]));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, WRITE_FLAGS, OFF(L_openat + 1, L_notify), OFF(L_openat + 1, L_allow));
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret);
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, notify ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0, &prog);
}

static int send_fd(int sock, int fd)
{
	char c = 0;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	char buf[CMSG_SPACE(sizeof(int))];
	memset(buf, 0, sizeof(buf));
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof(buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = {.iov_base = &c, .iov_len = 1};
	char buf[CMSG_SPACE(sizeof(int))];
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = buf, .msg_controllen = sizeof(buf)};
	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

static volatile unsigned long calls;

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// keep spins while calls move (-k), at nice 19; a simpler keeper than
// internal/awake's (it polls every 100 us when idle instead of sleeping in
// a futex), enough for a benchmark.
static void *keep(void *arg)
{
	(void)arg;
	setpriority(PRIO_PROCESS, 0, 19);
	unsigned long seen = calls;
	long long since = now_ns();
	for (;;) {
		if (calls != seen) {
			seen = calls;
			since = now_ns();
		} else if (now_ns() - since > 250000) {
			usleep(100);
			continue;
		}
		__builtin_ia32_pause();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int notify = 1, only_creates = 0, addfd = 0, keeper = 0, a = 1;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "-n") == 0)
			notify = 0;
		else if (strcmp(argv[a], "-c") == 0)
			only_creates = 1;
		else if (strcmp(argv[a], "-a") == 0)
			addfd = 1;
		else if (strcmp(argv[a], "-k") == 0)
			keeper = 1;
		else
			break;
	}
	if (a >= argc) {
		fprintf(stderr, "usage: notifyfloor [-n | -c] [-a] [-k] CMD [ARG...]\n");
		return 2;
	}
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return perror("socketpair"), 1;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = install(notify, only_creates);
		if (fd < 0)
			perror("seccomp"), _exit(126);
		if (notify && (send_fd(sp[1], fd) < 0 || close(fd) < 0))
			_exit(126);
		if (!notify)
			send_fd(sp[1], 0);
		execvp(argv[a], argv + a);
		perror(argv[a]);
		_exit(127);
	}
	close(sp[1]);
	int fd = recv_fd(sp[0]);
	long count = 0;
	if (notify && fd >= 0) {
		unsigned long long fl = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, fl) < 0)
			perror("SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (continuing without)");
		struct seccomp_notif_sizes sz;
		if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0)
			return perror("sizes"), 1;
		struct seccomp_notif *req = calloc(1, sz.seccomp_notif > sizeof(*req) ? sz.seccomp_notif : sizeof(*req));
		struct seccomp_notif_resp *resp =
			calloc(1, sz.seccomp_notif_resp > sizeof(*resp) ? sz.seccomp_notif_resp : sizeof(*resp));
		pthread_t kt;
		if (keeper && pthread_create(&kt, NULL, keep, NULL) != 0)
			return perror("keeper"), 1;
		for (;;) {
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			if (poll(&pf, 1, -1) < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (!(pf.revents & POLLIN))
				break; // POLLHUP: every filtered task is gone
			memset(req, 0, sz.seccomp_notif);
			if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
				if (errno == EINTR)
					continue;
				break; // ENOENT/EBADF...: every filtered task is gone
			}
			count++;
			calls++;
			if (addfd && (req->data.nr == SYS_open || req->data.nr == SYS_openat || req->data.nr == SYS_creat)) {
				int nf = open("/dev/null", O_RDWR | O_CLOEXEC);
				struct seccomp_notif_addfd ad = {.id = req->id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = (unsigned)nf};
				if (ioctl(fd, SECCOMP_IOCTL_NOTIF_ADDFD, &ad) < 0 && errno != ENOENT)
					perror("addfd");
				close(nf);
				continue;
			}
			memset(resp, 0, sz.seccomp_notif_resp);
			resp->id = req->id;
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno != ENOENT)
				perror("send");
		}
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return perror("waitpid"), 1;
	fprintf(stderr, "notifyfloor: %ld notifications\n", count);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
