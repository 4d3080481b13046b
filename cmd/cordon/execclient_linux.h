// What the three files of `cordon exec`'s C client share (amd64 only; see
// execclient_linux.c): the parsed command line, the request buffer, the
// report and the checks the Go tests call through cgo
// (execwire_linux_amd64.go).

#ifndef CORDON_EXECCLIENT_H
#define CORDON_EXECCLIENT_H

#include <stddef.h>
#include <stdint.h>

// The command line the client handles: `cordon exec NAME [--timeout D]
// [--cwd DIR] [--memory SIZE] [--detach] [--report FILE] [--json]
// [--sandbox] [--] CMD...`.
struct cx_flags {
	const char *name, *timeout, *cwd, *memory, *report;
	int detach, json, sandbox;
	int first; // argv's index of the command
};

// cx_parse fills f from argv: 0, or -1 for what the Go client handles
// (-h, another flag, a missing value or name or command, an invalid name).
int cx_parse(int argc, char **argv, struct cx_flags *f);

// cx_request builds the request in cx_buf (cx_len bytes): 0, or -1 when
// it does not fit (the Go client sends it).
int cx_request(int argc, char **argv, char **envp, const struct cx_flags *f);
extern char cx_buf[256 << 10];
extern size_t cx_len;

// cx_reply_ok checks the server's response header: an exit code of 0-255
// and a message and report of at most EXEC_MAX_RESPONSE bytes in all.
int cx_reply_ok(const uint32_t rh[6]);

// cx_connect finds session name's socket in cordon's state directory
// (every directory on the way the user's own and private), connects and
// checks its server (cordon_exec_server_ok): the socket, or -1 with
// nothing left open.
int cx_connect(const char *name, char **envp);

// The report (--report, --json): see execreport_linux.c.
extern int cx_json;
extern int cx_report_fd;
extern const char *cx_report_path;
long cx_open_report(const char *path);
long cx_write_report(const char *data, size_t n);
void cx_strerror(int e, char *buf, size_t n);

// cx_gone prints the session_gone message, writes its report and exits 125.
void cx_gone(const char *name, const char *why) __attribute__((noreturn));

#endif
