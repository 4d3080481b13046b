// Shared by the two `cordon exec` clients (execfast_linux.c, execclient_linux.c).

#include <stddef.h>

// cordon_exec_server_ok returns 0 when the peer of the connected socket
// sock is the supervisor of the session whose directory is sessdir: the
// same uid, the pid its info.json records, and a process of this PID
// namespace (not one inside a sandbox). Otherwise it returns -1 and, when
// why is not NULL, puts the reason there (NUL-terminated, at most whyn).
int cordon_exec_server_ok(int sock, const char *sessdir, char *why, size_t whyn);

// cordon_invoked_as_oci reports whether argv0's last component is
// "cordon-oci": then "exec" is runc's (internal/ociruntime), not cordon's.
// It uses no C library function: the fast client runs before libc starts.
static inline int cordon_invoked_as_oci(const char *argv0)
{
	const char *base = argv0, *want = "cordon-oci";
	for (const char *p = argv0; p && *p; p++)
		if (*p == '/')
			base = p + 1;
	if (!base)
		return 0;
	while (*want && *base == *want)
		base++, want++;
	return !*want && !*base;
}
