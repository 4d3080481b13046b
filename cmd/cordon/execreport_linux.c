//go:build linux && cgo

// The --report file of `cordon exec`'s C client, and its session_gone
// report. Opened before the request leaves (as `cordon run` opens its
// report): no symbolic link is followed in any folder or as the file, only
// a regular file with one link is accepted, and the open never blocks on a
// FIFO.
//
// Unlike a run's, the report of an exec cannot be denied inside the
// sandbox (the session was built before the path was known), so a command
// can replace the file at the path while it runs (rm and a forged report in
// its place) or write into it. cx_write_report therefore walks the path
// again once the command's processes are gone, writes through the
// descriptor only when the path still names that file, and otherwise
// removes what is at the path (never following it) and creates the report
// afresh there. The Go client (execreport.go) does the same.

#define _GNU_SOURCE
#include "execsys_linux.h"

#if defined(__x86_64__)

#include <fcntl.h>
#include <sys/stat.h>

#include "execclient_linux.h"
#include "execproto_linux.h"

int cx_json;
int cx_report_fd = -1;
const char *cx_report_path;

// report_dir opens the folder of path one component at a time, following
// no symbolic link, and points *name at the last component (in copy); the
// folder's descriptor or -errno.
static long report_dir(const char *path, char *copy, size_t n, const char **name)
{
	size_t l = xlen(path);
	*name = NULL;
	if (l + 1 > n)
		return -X_ENAMETOOLONG;
	xcopy(copy, path, l + 1);
	long dfd = xsys(SYS_openat, AT_FDCWD, (long)(path[0] == '/' ? "/" : "."), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (dfd < 0)
		return dfd;
	char *c = copy;
	while (*c) {
		if (*c == '/') {
			c++;
			continue;
		}
		char *e = c;
		while (*e && *e != '/')
			e++;
		int more = *e != 0;
		*e = 0;
		if (*name) {
			long nd = xsys(SYS_openat, dfd, (long)*name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0);
			xclose(dfd);
			if (nd < 0)
				return nd;
			dfd = nd;
		}
		*name = c;
		c = more ? e + 1 : e;
	}
	if (!*name || xeq(*name, ".") || xeq(*name, "..")) {
		xclose(dfd);
		return -X_EISDIR;
	}
	return dfd;
}

// open_file opens name in dfd for writing without following it or
// blocking, and accepts only a regular file with one link.
static long open_file(long dfd, const char *name, int excl)
{
	long fd = xsys(SYS_openat, dfd, (long)name, O_WRONLY | O_CREAT | (excl ? O_EXCL : 0) | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		       0644, 0);
	struct stat st;
	if (fd >= 0 && (xsys(SYS_fstat, fd, (long)&st, 0, 0, 0) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)) {
		xclose(fd);
		return -X_EINVAL;
	}
	return fd;
}

long cx_open_report(const char *path)
{
	char copy[4200];
	const char *name;
	long dfd = report_dir(path, copy, sizeof(copy), &name);
	if (dfd < 0)
		return dfd;
	long fd = open_file(dfd, name, 0);
	xclose(dfd);
	if (fd >= 0) {
		long e = xsys(SYS_ftruncate, fd, 0, 0, 0, 0);
		if (e < 0) {
			xclose(fd);
			return e;
		}
	}
	return fd;
}

// replace_file removes what is at name in dfd (never following it) and
// creates a regular file there; when the entry cannot be removed, it takes
// an existing regular file with one link in place.
static long replace_file(long dfd, const char *name)
{
	long e = xsys(SYS_unlinkat, dfd, (long)name, 0, 0, 0);
	if (e < 0 && e != -X_ENOENT)
		xsys(SYS_unlinkat, dfd, (long)name, AT_REMOVEDIR, 0, 0);
	long fd = open_file(dfd, name, 1);
	if (fd == -X_EEXIST)
		fd = open_file(dfd, name, 0);
	return fd;
}

// own_folder_writable gives the owner write and search permission on the
// folder dfd when the caller owns it and lacks them: a command running as
// the caller (rootless) can chmod 555 the report's folder after planting a
// forged report in it. It returns 1 when it changed the mode.
static int own_folder_writable(long dfd)
{
	long fd = xsys(SYS_openat, dfd, (long)".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return 0;
	struct stat st;
	int changed = xsys(SYS_fstat, fd, (long)&st, 0, 0, 0) == 0 && st.st_uid == (uint32_t)xsys(SYS_geteuid, 0, 0, 0, 0, 0) &&
		      (st.st_mode & 0300) != 0300 && xsys(SYS_fchmod, fd, (long)((st.st_mode & 07777) | 0300), 0, 0, 0) == 0;
	xclose(fd);
	return changed;
}

// reopen_report returns a descriptor of the file now at the report's path:
// the one opened first when the path still names it, else a file created
// afresh in place of whatever the command left there; -errno when neither
// can be had.
static long reopen_report(void)
{
	char copy[4200];
	const char *name;
	long dfd = report_dir(cx_report_path, copy, sizeof(copy), &name);
	if (dfd < 0)
		return dfd;
	struct stat now, held;
	long fd;
	if (xsys(SYS_newfstatat, dfd, (long)name, (long)&now, AT_SYMLINK_NOFOLLOW, 0) == 0 &&
	    xsys(SYS_fstat, cx_report_fd, (long)&held, 0, 0, 0) == 0 && S_ISREG(now.st_mode) && now.st_dev == held.st_dev &&
	    now.st_ino == held.st_ino && now.st_nlink == 1) {
		fd = xsys(SYS_dup, cx_report_fd, 0, 0, 0, 0);
	} else {
		fd = replace_file(dfd, name);
		if (fd < 0 && own_folder_writable(dfd))
			fd = replace_file(dfd, name);
	}
	xclose(dfd);
	if (fd >= 0) {
		long e = xsys(SYS_ftruncate, fd, 0, 0, 0, 0);
		if (e == 0)
			e = xsys(SYS_lseek, fd, 0, 0 /* SEEK_SET */, 0, 0);
		if (e < 0) {
			xclose(fd);
			return e;
		}
	}
	return fd;
}

long cx_write_report(const char *data, size_t n)
{
	if (cx_report_fd < 0)
		return 0;
	long fd = reopen_report();
	xclose(cx_report_fd);
	cx_report_fd = -1;
	if (fd < 0)
		return fd;
	long e = xwrite_all((int)fd, data, n);
	long c = xsys(SYS_close, fd, 0, 0, 0, 0);
	return e < 0 ? e : c;
}

// cx_strerror is the C library's strerror for the errors a report's write
// can meet (the Go client's messages name the same).
void cx_strerror(int e, char *buf, size_t n)
{
	static const struct {
		int e;
		const char *s;
	} t[] = {
		{1, "Operation not permitted"}, {2, "No such file or directory"}, {4, "Interrupted system call"},
		{5, "Input/output error"}, {6, "No such device or address"}, {9, "Bad file descriptor"},
		{11, "Resource temporarily unavailable"}, {12, "Cannot allocate memory"}, {13, "Permission denied"},
		{14, "Bad address"}, {16, "Device or resource busy"}, {17, "File exists"}, {18, "Invalid cross-device link"},
		{20, "Not a directory"}, {21, "Is a directory"}, {22, "Invalid argument"}, {26, "Text file busy"},
		{27, "File too large"}, {28, "No space left on device"}, {30, "Read-only file system"}, {31, "Too many links"},
		{36, "File name too long"}, {39, "Directory not empty"}, {40, "Too many levels of symbolic links"},
		{75, "Value too large for defined data type"}, {116, "Stale file handle"}, {122, "Disk quota exceeded"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i].e == e) {
			size_t l = xlen(t[i].s);
			if (l >= n)
				l = n - 1;
			xcopy(buf, t[i].s, l);
			buf[l] = 0;
			return;
		}
	}
	size_t k = 0;
	xcopy(buf, "Unknown error ", 14);
	k = 14 + xdec(buf + 14, (uint32_t)e);
	buf[k] = 0;
}

// cx_append copies the parts after what b holds (*len), within n bytes.
static void cx_append(char *b, size_t n, size_t *len, const char *const *parts, size_t nparts)
{
	for (size_t i = 0; i < nparts; i++) {
		size_t l = xlen(parts[i]);
		if (*len + l >= n)
			l = n - 1 - *len;
		xcopy(b + *len, parts[i], l);
		*len += l;
	}
	b[*len] = 0;
}

void cx_gone(const char *name, const char *why)
{
	char msg[512], rep[1024];
	size_t m = 0, r = 0;
	const char *parts[] = {"session_gone: session ", name, " is not running (", why, "); start it with: cordon session start --name ", name};
	cx_append(msg, sizeof(msg), &m, parts, sizeof(parts) / sizeof(parts[0]));
	const char *rparts[] = {"{\n  \"exit_code\": " CORDON_XSTR(CORDON_EXIT_SETUP) ",\n  \"failure_type\": \"session_gone\",\n  \"failure_detail\": \"", msg,
				"\",\n  \"duration_ms\": 0\n}\n"};
	cx_append(rep, sizeof(rep), &r, rparts, sizeof(rparts) / sizeof(rparts[0]));
	xputs2("cordon: ");
	(void)xwrite_all(2, msg, m);
	xputs2("\n");
	if (cx_json)
		(void)xwrite_all(2, rep, r);
	(void)cx_write_report(rep, r);
	xsys(SYS_exit_group, CORDON_EXIT_SETUP, 0, 0, 0, 0);
	__builtin_unreachable();
}

#endif
