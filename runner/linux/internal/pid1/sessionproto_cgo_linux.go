//go:build linux && cgo

package pid1

// #include "forkproto_linux.h"
import "C"

import "unsafe"

// The fork server's wire format is defined once, in forkproto_linux.h; the
// Go constants of sessionproto_linux.go (which builds without cgo too)
// are checked against it here when the package builds: each line is an
// array whose length is the difference, and it compiles only when that is
// zero.
var (
	_ [C.REQ_MAGIC - protoReqMagic]struct{}
	_ [protoReqMagic - C.REQ_MAGIC]struct{}
	_ [C.STATUS_MAGIC - protoStatusMagic]struct{}
	_ [protoStatusMagic - C.STATUS_MAGIC]struct{}
	_ [C.PROTO_VERSION - protoVersion]struct{}
	_ [protoVersion - C.PROTO_VERSION]struct{}
	_ [C.REQ_EXEC - protoReqExec]struct{}
	_ [protoReqExec - C.REQ_EXEC]struct{}
	_ [C.REQ_SIGNAL - protoReqSignal]struct{}
	_ [protoReqSignal - C.REQ_SIGNAL]struct{}
	_ [C.REQ_SPARE - protoReqSpare]struct{}
	_ [protoReqSpare - C.REQ_SPARE]struct{}
	_ [C.MAX_FDS - 1 - ProtoMaxSpares]struct{}
	_ [ProtoMaxSpares - (C.MAX_FDS - 1)]struct{}
	_ [C.FLAG_DETACH - ProtoFlagDetach]struct{}
	_ [ProtoFlagDetach - C.FLAG_DETACH]struct{}
	_ [C.FLAG_TTY - ProtoFlagTTY]struct{}
	_ [ProtoFlagTTY - C.FLAG_TTY]struct{}
	_ [C.FLAG_CGROUP - ProtoFlagCgroup]struct{}
	_ [ProtoFlagCgroup - C.FLAG_CGROUP]struct{}
	_ [C.CORDON_SIG_KILLTREE - ProtoSigKillTree]struct{}
	_ [ProtoSigKillTree - C.CORDON_SIG_KILLTREE]struct{}
	_ [C.MAX_PAYLOAD - protoMaxPayload]struct{}
	_ [protoMaxPayload - C.MAX_PAYLOAD]struct{}
	_ [C.PHASE_RAN - PhaseRan]struct{}
	_ [PhaseRan - C.PHASE_RAN]struct{}
	_ [C.PHASE_CHDIR - PhaseChdir]struct{}
	_ [PhaseChdir - C.PHASE_CHDIR]struct{}
	_ [C.PHASE_EXEC - PhaseExec]struct{}
	_ [PhaseExec - C.PHASE_EXEC]struct{}
	_ [C.PHASE_SHIM - PhaseShim]struct{}
	_ [PhaseShim - C.PHASE_SHIM]struct{}
	_ [C.PHASE_ATTRS - PhaseAttrs]struct{}
	_ [PhaseAttrs - C.PHASE_ATTRS]struct{}
	_ [C.STATUS_KILLED - statusKilled]struct{}
	_ [statusKilled - C.STATUS_KILLED]struct{}
	_ [C.STATUS_AGAIN - statusAgain]struct{}
	_ [statusAgain - C.STATUS_AGAIN]struct{}
	_ [C.CTRL_READY - SessionReadyByte]struct{}
	_ [SessionReadyByte - C.CTRL_READY]struct{}
	_ [C.CTRL_ABORT - SessionAbortByte]struct{}
	_ [SessionAbortByte - C.CTRL_ABORT]struct{}
)

// The layouts: the sizes, and the offset of every field header() writes
// and decodeStatus reads.
var (
	_ [unsafe.Sizeof(C.struct_cordon_req{}) - protoHeaderSize]struct{}
	_ [protoHeaderSize - unsafe.Sizeof(C.struct_cordon_req{})]struct{}
	_ [unsafe.Sizeof(C.struct_cordon_status{}) - ProtoStatusSize]struct{}
	_ [ProtoStatusSize - unsafe.Sizeof(C.struct_cordon_status{})]struct{}
)

var (
	_ [unsafe.Offsetof(C.struct_cordon_req{}.magic) - reqMagic]struct{}
	_ [reqMagic - unsafe.Offsetof(C.struct_cordon_req{}.magic)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.version) - reqVersion]struct{}
	_ [reqVersion - unsafe.Offsetof(C.struct_cordon_req{}.version)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}._type) - reqType]struct{}
	_ [reqType - unsafe.Offsetof(C.struct_cordon_req{}._type)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.id) - reqID]struct{}
	_ [reqID - unsafe.Offsetof(C.struct_cordon_req{}.id)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.flags) - reqFlags]struct{}
	_ [reqFlags - unsafe.Offsetof(C.struct_cordon_req{}.flags)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.sig) - reqSig]struct{}
	_ [reqSig - unsafe.Offsetof(C.struct_cordon_req{}.sig)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.nargv) - reqNargv]struct{}
	_ [reqNargv - unsafe.Offsetof(C.struct_cordon_req{}.nargv)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.nenv) - reqNenv]struct{}
	_ [reqNenv - unsafe.Offsetof(C.struct_cordon_req{}.nenv)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_req{}.len) - reqLen]struct{}
	_ [reqLen - unsafe.Offsetof(C.struct_cordon_req{}.len)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.magic) - stMagic]struct{}
	_ [stMagic - unsafe.Offsetof(C.struct_cordon_status{}.magic)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.version) - stVersion]struct{}
	_ [stVersion - unsafe.Offsetof(C.struct_cordon_status{}.version)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.phase) - stPhase]struct{}
	_ [stPhase - unsafe.Offsetof(C.struct_cordon_status{}.phase)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.err) - stErr]struct{}
	_ [stErr - unsafe.Offsetof(C.struct_cordon_status{}.err)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.wstatus) - stWstatus]struct{}
	_ [stWstatus - unsafe.Offsetof(C.struct_cordon_status{}.wstatus)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.flags) - stFlags]struct{}
	_ [stFlags - unsafe.Offsetof(C.struct_cordon_status{}.flags)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.utime_us) - stUtime]struct{}
	_ [stUtime - unsafe.Offsetof(C.struct_cordon_status{}.utime_us)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.stime_us) - stStime]struct{}
	_ [stStime - unsafe.Offsetof(C.struct_cordon_status{}.stime_us)]struct{}
	_ [unsafe.Offsetof(C.struct_cordon_status{}.maxrss_kb) - stMaxRSS]struct{}
	_ [stMaxRSS - unsafe.Offsetof(C.struct_cordon_status{}.maxrss_kb)]struct{}
)
