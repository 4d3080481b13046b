// The libc-free primitives of `cordon exec`'s C client (execclient_linux.c,
// execreport_linux.c, execserver_linux.c): raw system calls and the few
// string helpers it needs. The client runs at the binary's ELF entry point,
// before the C library starts: no TLS, so no errno and no stack protector,
// no IFUNC-resolved memcpy. Every system call is a raw one, every loop is
// written out, and the compiler is told (below, for every file that
// includes this one first) not to turn loops into memset or memcpy calls
// nor to add stack-protector checks. amd64 only: elsewhere the Go client
// serves every exec (execclient_linux.go).

#ifndef CORDON_EXECSYS_H
#define CORDON_EXECSYS_H

#if defined(__x86_64__)

#pragma GCC optimize("no-tree-loop-distribute-patterns", "no-stack-protector")

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

// The errors the client tells apart, as the kernel returns them (-errno).
#define X_EINTR 4
#define X_ENOENT 2
#define X_EIO 5
#define X_EEXIST 17
#define X_EISDIR 21
#define X_EINVAL 22
#define X_ENAMETOOLONG 36

// xsys6 is a raw system call: the result, or -errno.
static inline long xsys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return ret;
}

static inline long xsys(long n, long a, long b, long c, long d, long e) { return xsys6(n, a, b, c, d, e, 0); }

static inline void xclose(long fd) { xsys(SYS_close, fd, 0, 0, 0, 0); }

static inline size_t xlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static inline int xeq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

// xprefix returns what follows prefix p in s, or NULL.
static inline const char *xprefix(const char *s, const char *p)
{
	while (*p)
		if (*s++ != *p++)
			return NULL;
	return s;
}

// xfind returns the first occurrence of needle in the NUL-terminated hay,
// or NULL.
static inline const char *xfind(const char *hay, const char *needle)
{
	for (; *hay; hay++)
		if (xprefix(hay, needle))
			return hay;
	return NULL;
}

static inline void xcopy(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

static inline void xzero(void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile char *)p)[i] = 0;
}

// xdec writes v in decimal at b (at least 10 bytes) and returns its length.
static inline size_t xdec(char *b, uint32_t v)
{
	char t[10];
	size_t n = 0;
	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		b[i] = t[n - 1 - i];
	return n;
}

// xcat builds dst = a + b (+ c) within n bytes; -1 when it does not fit
// (a path cut short would name another file).
static inline int xcat(char *dst, size_t n, const char *a, const char *b, const char *c)
{
	size_t la = xlen(a), lb = xlen(b), lc = c ? xlen(c) : 0;
	if (la + lb + lc + 1 > n)
		return -1;
	xcopy(dst, a, la);
	xcopy(dst + la, b, lb);
	xcopy(dst + la + lb, c ? c : "", lc);
	dst[la + lb + lc] = 0;
	return 0;
}

static inline int xread_full(int fd, void *buf, size_t n)
{
	char *p = buf;
	while (n > 0) {
		long r = xsys(SYS_read, fd, (long)p, (long)n, 0, 0);
		if (r == -X_EINTR) // a forwarded signal
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

// xwrite_all writes all of s to fd: 0, or -errno (-X_EIO for a write of
// nothing).
static inline long xwrite_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		long w = xsys(SYS_write, fd, (long)s, (long)n, 0, 0);
		if (w == -X_EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? w : -X_EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static inline void xputs2(const char *s) { (void)xwrite_all(2, s, xlen(s)); }

#endif
#endif
