//go:build linux && cgo

package main

/*
#include <stdlib.h>
#include <string.h>
#include "execclient_linux.h"

// cx_request_from parses argv as the C client does and builds its request
// in cx_buf: 0, or -1 when the C client leaves the exec to the Go client.
static int cx_request_from(int argc, char **argv, char **envp)
{
	struct cx_flags f;
	if (cx_parse(argc, argv, &f) < 0)
		return -1;
	return cx_request(argc, argv, envp, &f);
}
*/
import "C"

import "unsafe"

// The C client's own encoder and decoder, for the tests that check them
// against the Go server's (execwire_linux_amd64_test.go). Not safe for
// concurrent use: the C client has one request buffer.

// cExecRequest is the request the C client sends for `cordon ARGS...`
// (args[0] is "exec") in environment env; ok is false when the C client
// leaves it to the Go client.
func cExecRequest(args, env []string) (req []byte, ok bool) {
	cargs := cStrings(append([]string{"cordon"}, args...))
	defer freeStrings(cargs)
	cenv := cStrings(env)
	defer freeStrings(cenv)
	if C.cx_request_from(C.int(len(args)+1), &cargs[0], &cenv[0]) < 0 {
		return nil, false
	}
	return C.GoBytes(unsafe.Pointer(&C.cx_buf[0]), C.int(C.cx_len)), true
}

// cReplyOK is the C client's check of a response header (24 bytes).
func cReplyOK(h []byte) bool {
	var w [6]C.uint32_t
	C.memcpy(unsafe.Pointer(&w[0]), unsafe.Pointer(&h[0]), C.size_t(len(w)*4))
	return C.cx_reply_ok(&w[0]) != 0
}

// cStrings is a NULL-terminated array of C copies of ss.
func cStrings(ss []string) []*C.char {
	out := make([]*C.char, 0, len(ss)+1)
	for _, s := range ss {
		out = append(out, C.CString(s))
	}
	return append(out, nil)
}

func freeStrings(cs []*C.char) {
	for _, c := range cs {
		C.free(unsafe.Pointer(c))
	}
}
