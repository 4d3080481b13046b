// Shared by the two `cordon exec` clients (execfast_linux.c, execclient_linux.c).

#include <stddef.h>

// cordon_exec_server_ok returns 0 when the peer of the connected socket
// sock is the supervisor of the session whose directory is sessdir: the
// same uid, the pid its info.json records, and a process of this PID
// namespace (not one inside a sandbox). Otherwise it returns -1 and, when
// why is not NULL, puts the reason there (NUL-terminated, at most whyn).
int cordon_exec_server_ok(int sock, const char *sessdir, char *why, size_t whyn);
