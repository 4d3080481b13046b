//go:build linux && cgo

// `cordon exec` is served in C before the Go runtime starts, on amd64, by
// the client at the binary's entry point (execclient_linux.c); what it
// leaves (a terminal, -h, every refusal, other architectures) the Go client
// serves (execclient_linux.go). A harness starts the client for every
// command, and a Go start-up would cost more than the exec itself.

package main

/*
#cgo CFLAGS: -Wall -Wextra
#cgo linux,amd64 LDFLAGS: -Wl,-e,cordonentry
#include "execproto_linux.h"
*/
import "C"

import (
	"unsafe"

	"github.com/cordon-run/cordon"
	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

// The exec protocol of the C client (execproto_linux.h) against the Go
// server's (internal/session), and the exit codes of the C
// (internal/exitcodes/exitcodes.h, execproto_linux.h) against the Go ones, checked when this package builds: each line is an array whose
// length is the difference, and it compiles only when that is zero.
var (
	_ [C.EXEC_REQ_MAGIC - sessiond.WireReqMagic]struct{}
	_ [sessiond.WireReqMagic - C.EXEC_REQ_MAGIC]struct{}
	_ [C.EXEC_RESP_MAGIC - sessiond.WireRespMagic]struct{}
	_ [sessiond.WireRespMagic - C.EXEC_RESP_MAGIC]struct{}
	_ [C.EXEC_SIG_MAGIC - sessiond.WireSigMagic]struct{}
	_ [sessiond.WireSigMagic - C.EXEC_SIG_MAGIC]struct{}
	_ [C.EXEC_WINCH_MAGIC - sessiond.WireWinchMagic]struct{}
	_ [sessiond.WireWinchMagic - C.EXEC_WINCH_MAGIC]struct{}
	_ [C.EXEC_PROTO_VERSION - sessiond.WireVersion]struct{}
	_ [sessiond.WireVersion - C.EXEC_PROTO_VERSION]struct{}
	_ [C.EXEC_REQ_EXEC - sessiond.WireReqExec]struct{}
	_ [sessiond.WireReqExec - C.EXEC_REQ_EXEC]struct{}
	_ [C.EXEC_REQ_STOP - sessiond.WireReqStop]struct{}
	_ [sessiond.WireReqStop - C.EXEC_REQ_STOP]struct{}
	_ [C.EXEC_MAX_PAYLOAD - sessiond.WireMaxPayload]struct{}
	_ [sessiond.WireMaxPayload - C.EXEC_MAX_PAYLOAD]struct{}
	_ [C.EXEC_MAX_RESPONSE - sessiond.WireMaxResponse]struct{}
	_ [sessiond.WireMaxResponse - C.EXEC_MAX_RESPONSE]struct{}
	_ [unsafe.Sizeof(C.struct_cordon_exec_req{}) - sessiond.WireReqHeader]struct{}
	_ [sessiond.WireReqHeader - unsafe.Sizeof(C.struct_cordon_exec_req{})]struct{}
	_ [unsafe.Sizeof(C.struct_cordon_exec_resp{}) - sessiond.WireRespHeader]struct{}
	_ [sessiond.WireRespHeader - unsafe.Sizeof(C.struct_cordon_exec_resp{})]struct{}
	_ [unsafe.Sizeof(C.struct_cordon_exec_frame{}) - sessiond.WireSigFrame]struct{}
	_ [sessiond.WireSigFrame - unsafe.Sizeof(C.struct_cordon_exec_frame{})]struct{}
	_ [C.CORDON_EXIT_SETUP - cordon.ExitSetupError]struct{}
	_ [cordon.ExitSetupError - C.CORDON_EXIT_SETUP]struct{}
	_ [C.CORDON_EXIT_CONFIG - exitConfig]struct{}
	_ [exitConfig - C.CORDON_EXIT_CONFIG]struct{}
)
