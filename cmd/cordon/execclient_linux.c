//go:build linux && cgo

// `cordon exec NAME [flags] -- CMD...`, in C, before the Go runtime starts:
// the full client. On amd64 the common case never reaches it: the fast
// path at the entry point (execfast_linux.c) serves it before the C
// library starts, and leaves everything else here.
//
// A harness starts this client for every command, so its own start-up
// counts: this constructor handles "exec" and never returns, as the
// sandbox's init does (runner/sandboxinit_linux.c). It finds the session's
// socket in cordon's private state directory (checking that every
// directory on the way is the user's own and not writable by others, as
// the Go side does), sends the command, the environment env.pass picks
// from and its own fds 0, 1 and 2, forwards SIGINT, SIGTERM, SIGHUP and
// SIGQUIT, and exits with the exit code the supervisor sends back after
// printing its message and writing the JSON report (--report, --json).
// It sends nothing to a server that is not the session's supervisor
// (cordon_exec_server_ok) and checks the reply's exit code and lengths.
// The wire format is session/proto.go's.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "execproto_linux.h"

extern char **environ;

static const char usage[] = "usage: cordon exec NAME [--timeout D] [--cwd DIR] [--memory SIZE] [--detach] [--report FILE] [--json] [--sandbox] -- CMD [ARG...]\n";

static int sock = -1;
// The caller's terminal, put in raw mode for a TTY exec and restored.
static int raw = 0;
static struct termios saved;

static void restore_tty(void)
{
	if (raw)
		tcsetattr(0, TCSADRAIN, &saved);
}

// take_type_ahead reads, without waiting, the complete lines and
// end-of-files that the canonical terminal on fd 0 holds, as
// runner.MakeRaw does: made raw, the terminal would hand each end-of-file
// (^D, stored as a NUL marker) over as a NUL byte, which the command's
// terminal echoes as "^@". Each end-of-file becomes the VEOF byte again.
static size_t take_type_ahead(const struct termios *t, char *buf, size_t cap)
{
	size_t n = 0;
	if (!(t->c_lflag & ICANON))
		return 0;
	for (int i = 0; i < 64 && n < cap; i++) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, 0) != 1 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)) || !(p.revents & POLLIN))
			break;
		ssize_t r = read(0, buf + n, cap - n);
		if (r < 0)
			break;
		if (r == 0)
			buf[n++] = (char)t->c_cc[VEOF];
		else
			n += (size_t)r;
	}
	return n;
}

// raw_tty puts the caller's terminal in raw mode (the command's own
// terminal does the line editing, echo and output processing) and returns
// the option carrying what it held ("input=HEX"), or NULL.
static char *raw_tty(void)
{
	if (tcgetattr(0, &saved) != 0)
		return NULL;
	char ahead[4096];
	size_t n = take_type_ahead(&saved, ahead, sizeof(ahead));
	struct termios r = saved;
	cfmakeraw(&r);
	if (tcsetattr(0, TCSADRAIN, &r) == 0)
		raw = 1;
	if (n == 0)
		return NULL;
	static char opt[6 + 2 * sizeof(ahead) + 1] = "input=";
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		opt[6 + 2 * i] = hex[(unsigned char)ahead[i] >> 4];
		opt[7 + 2 * i] = hex[(unsigned char)ahead[i] & 15];
	}
	opt[6 + 2 * n] = 0;
	return opt;
}

// The --report file, opened before anything else (as cordon run does): no
// symbolic link is followed in any folder or as the file, only a regular
// file with one link is accepted, and the open never blocks on a FIFO. The
// Go side (internal/hostfile) follows a link in a folder the caller cannot
// write; this client follows none.
//
// Unlike a run's, the report of an exec cannot be denied inside the
// sandbox (the session was built before the path was known), so a command
// can replace the file at the path while it runs (rm and a forged report in
// its place) or write into it. write_report therefore walks the path again
// once the command's processes are gone, writes through the descriptor only
// when the path still names that file, and otherwise removes what is at the
// path (never following it) and creates the report afresh there.
static int report_fd = -1;
static char *report_path;

// report_dir opens the folder of path one component at a time, following
// no symbolic link, and points *name at the last component (inside *copy,
// which the caller frees).
static int report_dir(const char *path, char **copy, const char **name)
{
	*name = NULL;
	*copy = strdup(path);
	if (!*copy)
		return -1;
	int dfd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	char *save = NULL;
	for (char *c = strtok_r(*copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (*name) {
			int n = openat(dfd, *name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			close(dfd);
			if (n < 0)
				return -1;
			dfd = n;
		}
		*name = c;
	}
	if (!*name || strcmp(*name, ".") == 0 || strcmp(*name, "..") == 0) {
		close(dfd);
		errno = EISDIR;
		return -1;
	}
	return dfd;
}

// open_file opens name in dfd for writing without following it or
// blocking, and accepts only a regular file with one link.
static int open_file(int dfd, const char *name, int excl)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | (excl ? O_EXCL : 0) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static int open_report(const char *path)
{
	char *copy;
	const char *name;
	int dfd = report_dir(path, &copy, &name);
	int fd = dfd < 0 ? -1 : open_file(dfd, name, 0);
	int e = errno;
	if (dfd >= 0)
		close(dfd);
	free(copy);
	if (fd >= 0 && ftruncate(fd, 0) < 0) {
		e = errno;
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && !(report_path = strdup(path))) {
		close(fd);
		fd = -1;
		e = ENOMEM;
	}
	errno = e;
	return fd;
}

// replace_file removes what is at name in dfd (never following it) and
// creates a regular file there; when the entry cannot be removed, it takes
// an existing regular file with one link in place (O_NOFOLLOW, no block).
static int replace_file(int dfd, const char *name)
{
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		(void)unlinkat(dfd, name, AT_REMOVEDIR);
	int fd = open_file(dfd, name, 1);
	if (fd < 0 && errno == EEXIST)
		fd = open_file(dfd, name, 0);
	return fd;
}

// own_folder_writable gives the owner write and search permission on the
// folder dfd when the caller owns it and lacks them: a command running as
// the caller (rootless) can chmod 555 the report's folder after planting a
// forged report in it. It returns 1 when it changed the mode.
static int own_folder_writable(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int changed = fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0300) != 0300 &&
		      fchmod(fd, (st.st_mode & 07777) | 0300) == 0;
	close(fd);
	return changed;
}

// reopen_report returns a descriptor of the file now at the report's path:
// report_fd when the path still names it (emptied), else a file created
// afresh in place of whatever the command left there; -1 when neither can
// be had (a folder of the path is gone or a link now, or the path is a
// non-empty folder).
static int reopen_report(void)
{
	char *copy;
	const char *name;
	int dfd = report_dir(report_path, &copy, &name);
	if (dfd < 0) {
		free(copy);
		return -1;
	}
	struct stat now, held;
	int fd = -1;
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && fstat(report_fd, &held) == 0 &&
	    S_ISREG(now.st_mode) && now.st_dev == held.st_dev && now.st_ino == held.st_ino && now.st_nlink == 1) {
		fd = dup(report_fd);
	} else {
		fd = replace_file(dfd, name);
		if (fd < 0 && own_folder_writable(dfd))
			fd = replace_file(dfd, name);
	}
	int e = errno;
	close(dfd);
	free(copy);
	if (fd >= 0 && (ftruncate(fd, 0) < 0 || lseek(fd, 0, SEEK_SET) < 0)) {
		e = errno;
		close(fd);
		fd = -1;
	}
	errno = e;
	return fd;
}

static void outs(int fd, const char *s);

// write_report writes the report once, at the report's path as it is now
// (see above), and closes it. It returns -1 (errno set) when the report
// could not be written.
static int write_report(const char *data, size_t n)
{
	if (report_fd < 0)
		return 0;
	int fd = reopen_report();
	int e = errno;
	close(report_fd);
	report_fd = -1;
	if (fd < 0) {
		errno = e;
		return -1;
	}
	while (n > 0) {
		ssize_t w = write(fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			close(fd);
			errno = e;
			return -1;
		}
		data += w;
		n -= (size_t)w;
	}
	return close(fd);
}

// refuse prints msg, writes the config_error report and exits 2: every
// invocation that names a report writes one.
static void refuse(const char *msg, int with_usage)
{
	outs(2, msg);
	if (with_usage)
		outs(2, usage);
	char rep[2048];
	size_t k = (size_t)snprintf(rep, sizeof(rep), "{\n  \"exit_code\": 2,\n  \"failure_type\": \"config_error\",\n  \"failure_detail\": \"");
	for (const char *m = msg; *m && k < sizeof(rep) - 64; m++) {
		unsigned char ch = (unsigned char)*m;
		if (ch == '\n' && m[1] == '\0')
			break;
		if (ch == '"' || ch == '\\')
			rep[k++] = '\\', rep[k++] = (char)ch;
		else if (ch < 0x20)
			k += (size_t)snprintf(rep + k, sizeof(rep) - k, "\\u%04x", ch);
		else
			rep[k++] = (char)ch;
	}
	k += (size_t)snprintf(rep + k, sizeof(rep) - k, "\",\n  \"duration_ms\": 0\n}\n");
	write_report(rep, k);
	_exit(CORDON_EXIT_CONFIG);
}

// report_arg finds --report's value before the flags are parsed, so that a
// refused flag still writes the report. It stops where the parser stops:
// at "--" or at the command (the second word that is not a flag or a
// flag's value), so a command's own "--report X" is never cordon's.
static const char *report_arg(int argc, char **argv)
{
	const char *r = NULL;
	int words = 0;
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];
		const char *f = a[0] == '-' && a[1] == '-' ? a + 2 : a[0] == '-' ? a + 1 : NULL;
		if (!f) {
			if (words++ > 0)
				break; // the command, without "--"
			continue;
		}
		if (strncmp(f, "report=", 7) == 0)
			r = f + 7;
		else if ((strcmp(f, "report") == 0 || strcmp(f, "timeout") == 0 || strcmp(f, "cwd") == 0 || strcmp(f, "memory") == 0) && i + 1 < argc) {
			if (f[0] == 'r')
				r = argv[i + 1];
			i++;
		}
	}
	return r;
}

// winsize packs the terminal's size as cols<<16 | rows, or 0.
static uint32_t winsize(void)
{
	struct winsize ws;
	if (ioctl(1, TIOCGWINSZ, &ws) < 0)
		return 0;
	return (uint32_t)ws.ws_col << 16 | ws.ws_row;
}

static void winch(int sig)
{
	(void)sig;
	int e = errno;
	uint32_t frame[2] = {EXEC_WINCH_MAGIC, winsize()};
	if (sock >= 0)
		(void)!write(sock, frame, sizeof(frame));
	errno = e;
}

static void out(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void outs(int fd, const char *s) { out(fd, s, strlen(s)); }

static void forward(int sig)
{
	uint32_t frame[2] = {EXEC_SIG_MAGIC, (uint32_t)sig};
	int e = errno;
	if (sock >= 0)
		(void)!write(sock, frame, sizeof(frame));
	errno = e;
}

// private_dir returns 0 when p is a directory owned by the user and not
// writable by group or others.
static int private_dir(const char *p)
{
	struct stat st;
	if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -1;
	return 0;
}

// state_dir mirrors runner.DefaultStateDir.
static void state_dir(char *buf, size_t n)
{
	if (geteuid() == 0) {
		snprintf(buf, n, "/run/cordon");
		return;
	}
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (x && *x && stat(x, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid()) {
		snprintf(buf, n, "%s/cordon", x);
		return;
	}
	const char *t = getenv("TMPDIR");
	if (!t || !*t)
		t = "/tmp";
	snprintf(buf, n, "%s/cordon-%u", t, (unsigned)geteuid());
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && !(i > 0 && (c == '.' || c == '_' || c == '-')))
			return 0;
	}
	return 1;
}

// gone reports that no session NAME answers, as `cordon run` reports a
// failure: a message, exit 125, and the report when one was asked for.
static void gone(const char *name, const char *why, const char *report, int json)
{
	restore_tty();
	char msg[512], rep[768];
	snprintf(msg, sizeof(msg),
		 "session_gone: session %s is not running (%s); start it with: cordon session start --name %s", name, why, name);
	snprintf(rep, sizeof(rep),
		 "{\n  \"exit_code\": " CORDON_XSTR(CORDON_EXIT_SETUP) ",\n  \"failure_type\": \"session_gone\",\n  \"failure_detail\": \"%s\",\n  \"duration_ms\": 0\n}\n", msg);
	outs(2, "cordon: ");
	outs(2, msg);
	outs(2, "\n");
	if (json)
		outs(2, rep);
	(void)report;
	write_report(rep, strlen(rep));
	_exit(CORDON_EXIT_SETUP);
}

static void die_setup(const char *what)
{
	restore_tty();
	fprintf(stderr, "cordon exec: %s: %s\n", what, strerror(errno));
	_exit(CORDON_EXIT_SETUP);
}

static int read_full(int fd, void *buf, size_t n)
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

// append_str adds s and its NUL to the growing buffer.
static void append_str(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;
	if (*len + n > *cap) {
		size_t c = (*cap ? *cap * 2 : 4096);
		while (c < *len + n)
			c *= 2;
		char *nb = realloc(*buf, c);
		if (!nb)
			die_setup("out of memory");
		*buf = nb;
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
}

static void client(int argc, char **argv)
{
	const char *name = NULL, *timeout = NULL, *cwd = NULL, *report = NULL, *memory = NULL;
	int json = 0, detach = 0, with_sandbox = 0, first = -1;
	const char *rp = report_arg(argc, argv);
	if (rp && (report_fd = open_report(rp)) < 0) {
		fprintf(stderr, "cordon: refused: --report %s: %s; cordon writes a report only to a regular file reached without symbolic links (remove it or give another path)\n",
			rp, errno == ELOOP || errno == ENOTDIR ? "a symbolic link is on the way" : errno == EINVAL || errno == ENXIO ? "not a regular file with one link" : strerror(errno));
		_exit(CORDON_EXIT_CONFIG);
	}
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char **val = NULL;
		if (strcmp(a, "--") == 0) {
			first = i + 1;
			break;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			outs(2, usage);
			_exit(0);
		}
		if (strcmp(a, "--json") == 0 || strcmp(a, "-json") == 0) {
			json = 1;
			continue;
		}
		if (strcmp(a, "--detach") == 0 || strcmp(a, "-detach") == 0) {
			detach = 1;
			continue;
		}
		if (strcmp(a, "--sandbox") == 0 || strcmp(a, "-sandbox") == 0) {
			with_sandbox = 1;
			continue;
		}
		const char *flags[] = {"timeout", "cwd", "report", "memory"};
		const char **vals[] = {&timeout, &cwd, &report, &memory};
		for (int k = 0; k < 4 && !val; k++) {
			size_t fl = strlen(flags[k]);
			const char *f = a[0] == '-' && a[1] == '-' ? a + 2 : a[0] == '-' ? a + 1 : NULL;
			if (!f || strncmp(f, flags[k], fl) != 0)
				continue;
			if (f[fl] == '=') {
				*vals[k] = f + fl + 1;
				val = vals[k];
			} else if (f[fl] == '\0') {
				if (i + 1 >= argc) {
					char msg[256];
					snprintf(msg, sizeof(msg), "cordon exec: --%s needs a value\n", flags[k]);
					refuse(msg, 1);
				}
				*vals[k] = argv[++i];
				val = vals[k];
			}
		}
		if (val)
			continue;
		if (a[0] == '-') {
			char msg[512];
			snprintf(msg, sizeof(msg), "cordon exec: unknown flag %.400s\n", a);
			refuse(msg, 1);
		}
		if (!name) {
			name = a;
			continue;
		}
		first = i; // the command, without "--"
		break;
	}
	if (!name || first < 0 || first >= argc)
		refuse(name ? "cordon exec: no command given; fix: cordon exec NAME [flags] -- CMD [ARG...]\n" : "cordon exec: no session name given\n", !name);
	if (!valid_name(name)) {
		char msg[512];
		snprintf(msg, sizeof(msg), "cordon exec: invalid session name \"%.200s\": use 1-64 of A-Z a-z 0-9 . _ - starting with a letter or digit\n", name);
		refuse(msg, 0);
	}

	char dir[4096], path[4096];
	state_dir(dir, sizeof(dir));
	if (private_dir(dir) < 0)
		gone(name, "cordon's state directory is missing or not private", report, json);
	// A path cut short would name another directory: refuse it.
	if ((size_t)snprintf(path, sizeof(path), "%s/sessions", dir) >= sizeof(path))
		gone(name, "cordon's state directory path is too long", report, json);
	if (private_dir(path) < 0)
		gone(name, "no session was ever started", report, json);
	if ((size_t)snprintf(path, sizeof(path), "%s/sessions/%s", dir, name) >= sizeof(path))
		gone(name, "cordon's state directory path is too long", report, json);
	if (private_dir(path) < 0)
		gone(name, "no such session", report, json);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", path) >= sizeof(sa.sun_path))
		gone(name, "its socket path is too long", report, json);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		die_setup("socket");
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		gone(name, errno == ECONNREFUSED ? "its supervisor is gone" : "no socket", report, json);
	// Nothing is sent (no descriptor, no environment) to a server that is
	// not the session's supervisor: a process in a sandbox that can write
	// where the state directory is could serve a socket there.
	char why[128];
	if (cordon_exec_server_ok(sock, path, why, sizeof(why)) < 0)
		gone(name, why, report, json);

	// Every fd of 0-2 must be open to be sent; a closed one becomes /dev/null.
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			int n = open("/dev/null", O_RDWR);
			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	}

	size_t len = 32, cap = 4096; // the header comes first
	char *buf = malloc(cap);
	if (!buf)
		die_setup("out of memory");
	uint32_t nopts = 0, nargv = 0, nenv = 0;
	char opt[4200];
	if (timeout) {
		snprintf(opt, sizeof(opt), "timeout=%s", timeout);
		append_str(&buf, &len, &cap, opt);
		nopts++;
	}
	if (memory) {
		snprintf(opt, sizeof(opt), "memory=%.64s", memory);
		append_str(&buf, &len, &cap, opt);
		nopts++;
	}
	if (cwd) {
		if (strlen(cwd) > 4096)
			refuse("cordon exec: --cwd is longer than 4096 bytes\n", 0);
		snprintf(opt, sizeof(opt), "cwd=%s", cwd);
		append_str(&buf, &len, &cap, opt);
		nopts++;
	} else {
		// Like cordon run: the command runs in this directory when the
		// sandbox shows it; the supervisor decides.
		char wd[4096];
		if (getcwd(wd, sizeof(wd))) {
			snprintf(opt, sizeof(opt), "wd=%s", wd);
			append_str(&buf, &len, &cap, opt);
			nopts++;
		}
	}
	if (detach) {
		append_str(&buf, &len, &cap, "detach=1");
		nopts++;
	}
	if (report || json) {
		append_str(&buf, &len, &cap, "report=1");
		nopts++;
	}
	if (with_sandbox) {
		append_str(&buf, &len, &cap, "sandbox=1");
		nopts++;
	}
	// Like cordon run: a terminal on both stdin and stdout gets the
	// command a fresh terminal of the sandbox's own (never this one).
	int tty = isatty(0) && isatty(1);
	if (tty) {
		uint32_t ws = winsize();
		snprintf(opt, sizeof(opt), "tty=1");
		append_str(&buf, &len, &cap, opt);
		snprintf(opt, sizeof(opt), "cols=%u", ws >> 16);
		append_str(&buf, &len, &cap, opt);
		snprintf(opt, sizeof(opt), "rows=%u", ws & 0xffff);
		append_str(&buf, &len, &cap, opt);
		nopts += 3;
		// Raw before the request leaves, so that nothing typed from now
		// on is read by the line discipline; what it held goes along.
		const char *input = raw_tty();
		if (input) {
			append_str(&buf, &len, &cap, input);
			nopts++;
		}
	}
	for (int i = first; i < argc; i++, nargv++)
		append_str(&buf, &len, &cap, argv[i]);
	for (char **e = environ; *e; e++, nenv++)
		append_str(&buf, &len, &cap, *e);
	uint32_t payload = (uint32_t)(len - 32);
	uint16_t ver = EXEC_PROTO_VERSION, typ = EXEC_REQ_EXEC;
	uint32_t magic = EXEC_REQ_MAGIC;
	memset(buf, 0, 32);
	memcpy(buf + 0, &magic, 4);
	memcpy(buf + 4, &ver, 2);
	memcpy(buf + 6, &typ, 2);
	memcpy(buf + 8, &nopts, 4);
	memcpy(buf + 12, &nargv, 4);
	memcpy(buf + 16, &nenv, 4);
	memcpy(buf + 20, &payload, 4);

	// The forwarding handlers are in place before the request leaves, with
	// the signals held until it is sent (a frame must not land inside the
	// request): a signal that arrives once the command may run is never
	// the default action on this client.
	sigset_t fwdset, oldset;
	sigemptyset(&fwdset);
	int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaddset(&fwdset, fwd[i]);
	sigprocmask(SIG_BLOCK, &fwdset, &oldset);
	struct sigaction sa_fwd = {.sa_handler = forward};
	sigemptyset(&sa_fwd.sa_mask);
	for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
		sigaction(fwd[i], &sa_fwd, NULL);

	int fds[3] = {0, 1, 2};
	char cbuf[CMSG_SPACE(sizeof(fds))];
	memset(cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	size_t sent = 0;
	while (sent < len) {
		ssize_t w = sendmsg(sock, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			gone(name, "it hung up", report, json);
		sent += (size_t)w;
		iov.iov_base = buf + sent;
		iov.iov_len = len - sent;
		m.msg_control = NULL;
		m.msg_controllen = 0;
	}
	free(buf);

	if (tty) {
		struct sigaction sa_w = {.sa_handler = winch};
		sigemptyset(&sa_w.sa_mask);
		sigaction(SIGWINCH, &sa_w, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	sigprocmask(SIG_SETMASK, &oldset, NULL);

	// The reply is checked before it is used: an exit code of 0-255, a
	// message and a report of at most EXEC_MAX_RESPONSE bytes in all.
	uint32_t rh[6];
	if (read_full(sock, rh, sizeof(rh)) < 0)
		gone(name, "it ended while the command ran", report, json);
	if (rh[0] != EXEC_RESP_MAGIC || rh[1] != EXEC_PROTO_VERSION || rh[2] > 255 || (uint64_t)rh[3] + rh[4] > EXEC_MAX_RESPONSE)
		gone(name, "its reply was malformed", report, json);
	int code = (int)(int32_t)rh[2];
	restore_tty();
	char *body = malloc((size_t)rh[3] + rh[4] + 1);
	if (!body || read_full(sock, body, (size_t)rh[3] + rh[4]) < 0)
		gone(name, "it ended while the command ran", report, json);
	out(2, body, rh[3]);
	if (rh[4] > 0) {
		if (json)
			out(2, body + rh[3], rh[4]);
		if (write_report(body + rh[3], rh[4]) < 0) {
			char msg[4400];
			snprintf(msg, sizeof(msg), "cordon: the report %s was replaced or moved while the command ran and cannot be written again (%s); "
				"give --report a path outside the folders the session can write\n", report_path, strerror(errno));
			outs(2, msg);
			_exit(CORDON_EXIT_SETUP);
		}
	}
	_exit(code);
}

__attribute__((constructor)) static void cordon_exec_client(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc < 2 || strcmp(argv[1], "exec") != 0 || cordon_invoked_as_oci(argv[0]))
		return;
	client(argc, argv);
}
