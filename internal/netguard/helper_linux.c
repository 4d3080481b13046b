//go:build linux && cgo

// The tun helper, in C, before the Go runtime starts.
//
// A rootless sandbox's network namespace belongs to the sandbox's user
// namespace, and only a single-threaded process may join a user namespace,
// which a Go process never is. So the supervisor runs
//   /proc/self/exe cordon-net-helper
// with fd 3 = the sandbox's user namespace and fd 4 = its network
// namespace; this constructor joins both (the user namespace only when it
// is not already ours), makes the tun device there (as MakeTun does) and
// sends it back over fd 5, and exits: the Go runtime never starts, whose
// start (about 5 ms) was most of the helper's time.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../exitcodes/exitcodes.h"

#define CORDON_NET_HELPER_ARG "cordon-net-helper"

/* The device, made here in C as MakeTun makes it in Go (tun_linux.go:
 * the same device, addresses, routes and sockets, and the same skipping
 * of what IPv6 cannot have), so that the helper never starts the Go
 * runtime, whose start was most of its time. Arguments: the DNS
 * addresses (bare), then the forwards (ADDR:PORT or [ADDR]:PORT). The
 * reply on fd 5 is as HelperMain's: one byte (the number of DNS sockets)
 * with the descriptors (the tun device first, then the DNS sockets, then
 * the forwards), or an error text. */

#define HELPER_TUN_NAME "cordon0"
#define HELPER_MTU 65520
#define HELPER_MAX_DNS 16
#define HELPER_MAX_FWD 32

static void helper_fail(const char *what, int err)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "%s: %s", what, strerror(err));
	if (n > 0)
		(void)!write(5, msg, (size_t)(n < (int)sizeof(msg) ? n : (int)sizeof(msg) - 1));
	_exit(1);
}

struct helper_req {
	struct nlmsghdr h;
	char buf[256];
};

static void helper_attr(struct helper_req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)r + NLMSG_ALIGN(r->h.nlmsg_len));
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* helper_nl sends one request and returns its acknowledgement's error
 * (0, or a positive errno). */
static int helper_nl(int fd, struct helper_req *r, unsigned int seq)
{
	char buf[4096];
	r->h.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	r->h.nlmsg_seq = seq;
	if (send(fd, r, r->h.nlmsg_len, 0) < 0)
		return errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
				continue;
			return -((struct nlmsgerr *)NLMSG_DATA(h))->error;
		}
	}
}

static int helper_link(int fd, unsigned int seq, int index, unsigned int up, const unsigned int *mtu)
{
	struct helper_req r;
	memset(&r, 0, sizeof(r));
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	r.h.nlmsg_type = RTM_NEWLINK;
	struct ifinfomsg *m = NLMSG_DATA(&r.h);
	m->ifi_family = AF_UNSPEC;
	m->ifi_index = index;
	m->ifi_flags = up;
	m->ifi_change = up;
	if (mtu)
		helper_attr(&r, IFLA_MTU, mtu, sizeof(*mtu));
	return helper_nl(fd, &r, seq);
}

static int helper_addr(int fd, unsigned int seq, int index, int family, const void *addr, int prefix, unsigned int flags)
{
	struct helper_req r;
	memset(&r, 0, sizeof(r));
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	r.h.nlmsg_type = RTM_NEWADDR;
	r.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *m = NLMSG_DATA(&r.h);
	m->ifa_family = family;
	m->ifa_prefixlen = prefix;
	m->ifa_flags = flags & 0xff;
	m->ifa_index = index;
	size_t len = family == AF_INET ? 4 : 16;
	helper_attr(&r, IFA_LOCAL, addr, len);
	helper_attr(&r, IFA_ADDRESS, addr, len);
	if (flags > 0xff)
		helper_attr(&r, IFA_FLAGS, &flags, sizeof(flags));
	return helper_nl(fd, &r, seq);
}

static int helper_route(int fd, unsigned int seq, int index, int family, unsigned char scope)
{
	struct helper_req r;
	memset(&r, 0, sizeof(r));
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	r.h.nlmsg_type = RTM_NEWROUTE;
	r.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *m = NLMSG_DATA(&r.h);
	m->rtm_family = family;
	m->rtm_table = RT_TABLE_MAIN;
	m->rtm_protocol = RTPROT_BOOT;
	m->rtm_scope = scope;
	m->rtm_type = RTN_UNICAST;
	helper_attr(&r, RTA_OIF, &index, sizeof(index));
	return helper_nl(fd, &r, seq);
}

static int helper_ifindex(const char *name)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
	int err = ioctl(fd, SIOCGIFINDEX, &ifr);
	int saved = errno;
	close(fd);
	errno = saved;
	return err < 0 ? -1 : ifr.ifr_ifindex;
}

/* helper_socket binds a UDP socket or a listening TCP socket to an
 * address and port, as loopbackSocket does; it returns -1 with errno. */
static int helper_socket(int type, const char *addr, int port)
{
	struct sockaddr_in6 sa6;
	struct sockaddr_in sa4;
	struct sockaddr *sa;
	socklen_t salen;
	int family, one = 1;

	memset(&sa4, 0, sizeof(sa4));
	memset(&sa6, 0, sizeof(sa6));
	if (inet_pton(AF_INET, addr, &sa4.sin_addr) == 1) {
		family = AF_INET;
		sa4.sin_family = AF_INET;
		sa4.sin_port = htons(port);
		sa = (struct sockaddr *)&sa4;
		salen = sizeof(sa4);
	} else if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) == 1) {
		family = AF_INET6;
		sa6.sin6_family = AF_INET6;
		sa6.sin6_port = htons(port);
		sa = (struct sockaddr *)&sa6;
		salen = sizeof(sa6);
	} else {
		errno = EINVAL;
		return -1;
	}
	int fd = socket(family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if ((family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    (type == SOCK_STREAM && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) ||
	    bind(fd, sa, salen) < 0 || (type == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int helper_is_loopback(const char *addr)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, addr, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, addr, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return 0;
}

static void helper_make_device(int argc, char **argv)
{
	int fds[1 + HELPER_MAX_DNS + HELPER_MAX_FWD];
	int nfds = 0, ndns = 0, nfwd = 0;
	char what[160];

	int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (tun < 0)
		helper_fail("open /dev/net/tun", errno);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, HELPER_TUN_NAME, IFNAMSIZ - 1);
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	if (ioctl(tun, TUNSETIFF, &ifr) < 0)
		helper_fail("create tun device " HELPER_TUN_NAME, errno);
	fds[nfds++] = tun;

	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl < 0)
		helper_fail("netlink", errno);
	int lo = helper_ifindex("lo"), err;
	if (lo < 0)
		helper_fail("bring lo up", errno);
	if ((err = helper_link(nl, 1, lo, IFF_UP, NULL)))
		helper_fail("bring lo up", err);
	int idx = helper_ifindex(HELPER_TUN_NAME);
	if (idx < 0)
		helper_fail("find " HELPER_TUN_NAME, errno);
	unsigned int mtu = HELPER_MTU;
	if ((err = helper_link(nl, 2, idx, 0, &mtu)))
		helper_fail("set the MTU of " HELPER_TUN_NAME, err);
	struct in_addr a4;
	struct in6_addr a6;
	inet_pton(AF_INET, "10.88.0.2", &a4);
	inet_pton(AF_INET6, "fdcd::2", &a6);
	if ((err = helper_addr(nl, 3, idx, AF_INET, &a4, 30, 0)))
		helper_fail("address 10.88.0.2/30", err);
	int v6 = helper_addr(nl, 4, idx, AF_INET6, &a6, 126, IFA_F_NODAD);
	if ((err = helper_link(nl, 5, idx, IFF_UP, NULL)))
		helper_fail("bring " HELPER_TUN_NAME " up", err);
	if ((err = helper_route(nl, 6, idx, AF_INET, RT_SCOPE_LINK)))
		helper_fail("IPv4 default route", err);
	/* Without IPv6 in the sandbox there is nothing to route. */
	if (v6 == 0 && (err = helper_route(nl, 7, idx, AF_INET6, RT_SCOPE_UNIVERSE)))
		helper_fail("IPv6 default route", err);
	close(nl);

	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		char host[64];
		int port;
		const char *colon = strrchr(a, ':');
		int is_fwd = 0;
		port = 0;
		if (a[0] == '[') {
			const char *end = strchr(a, ']');
			if (end && end[1] == ':' && (size_t)(end - a - 1) < sizeof(host)) {
				memcpy(host, a + 1, end - a - 1);
				host[end - a - 1] = 0;
				port = atoi(end + 2);
				is_fwd = 1;
			}
		} else if (colon && strchr(a, ':') == colon && (size_t)(colon - a) < sizeof(host)) {
			/* a.b.c.d:port (an IPv4 address has no colon) */
			memcpy(host, a, colon - a);
			host[colon - a] = 0;
			port = atoi(colon + 1);
			is_fwd = 1;
		}
		if (!is_fwd) {
			/* A DNS address: UDP and TCP on port 53, each skipped when
			 * it cannot be bound (as ::1 without IPv6). */
			if (!helper_is_loopback(a))
				continue;
			for (int t = 0; t < 2; t++) {
				int fd = helper_socket(t == 0 ? SOCK_DGRAM : SOCK_STREAM, a, 53);
				if (fd >= 0 && ndns < HELPER_MAX_DNS) {
					fds[nfds++] = fd;
					ndns++;
				}
			}
			continue;
		}
		if (nfwd >= HELPER_MAX_FWD || port <= 0 || port > 65535)
			continue;
		int fd = helper_socket(SOCK_STREAM, host, port);
		if (fd < 0) {
			if (errno == EADDRNOTAVAIL && strchr(host, ':'))
				continue; /* no IPv6 in the sandbox: nothing can connect to ::1 */
			snprintf(what, sizeof(what), "listen on %s in the sandbox for the allow list", a);
			helper_fail(what, errno);
		}
		fds[nfds++] = fd;
		nfwd++;
	}

	char count = (char)ndns;
	struct iovec iov = {.iov_base = &count, .iov_len = 1};
	char control[CMSG_SPACE(sizeof(fds))];
	memset(control, 0, sizeof(control));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = CMSG_SPACE(sizeof(int) * nfds)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	if (sendmsg(5, &msg, 0) < 0) {
		perror("cordon-net-helper: send the tun device");
		_exit(1);
	}
	_exit(0);
}

__attribute__((constructor)) static void cordon_net_helper(int argc, char **argv)
{
	struct stat target, self;

	if (argc < 2 || strcmp(argv[1], CORDON_NET_HELPER_ARG) != 0)
		return;
	if (fstat(3, &target) < 0 || stat("/proc/self/ns/user", &self) < 0) {
		perror("cordon-net-helper: user namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	if ((target.st_ino != self.st_ino || target.st_dev != self.st_dev) && setns(3, CLONE_NEWUSER) < 0) {
		perror("cordon-net-helper: join the sandbox's user namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	if (setns(4, CLONE_NEWNET) < 0) {
		perror("cordon-net-helper: join the sandbox's network namespace");
		_exit(CORDON_EXIT_SETUP);
	}
	close(3);
	close(4);
	helper_make_device(argc, argv);
}
