package pid1

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/cordon-run/cordon/runner"
)

// The wire format between the session supervisor and the fork server
// (sessioninit_linux.c), defined once in forkproto_linux.h: every constant
// and offset here is checked against that header when the package builds
// with cgo (sessionproto_cgo_linux.go).
const (
	SessionInitArg   = "cordon-session-init"
	protoReqMagic    = 0x58445243 // "CRDX"
	protoStatusMagic = 0x53445243 // "CRDS"
	protoVersion     = 2
	protoReqExec     = 1
	protoReqSignal   = 2
	protoReqSpare    = 3
	// protoMaxSpares is how many shim sockets one SPARE request carries
	// at most (at most the fork server's MAX_FDS).
	ProtoMaxSpares  = 5
	ProtoFlagDetach = 1
	ProtoFlagTTY    = 2
	// protoFlagCgroup: the request carries two more descriptors, the
	// exec's leaf cgroup.procs and the shims' home (sessionleaf_linux.go).
	ProtoFlagCgroup  = 4
	ProtoSigKillTree = -1
	protoHeaderSize  = 40
	ProtoStatusSize  = 48
	protoMaxPayload  = 8 << 20
	PhaseRan         = 0
	PhaseChdir       = 1
	PhaseExec        = 2
	PhaseShim        = 3
	// phaseAttrs: the shim could not restore the process attributes its
	// command inherits (a command lowered a hard limit or raised the
	// nice value of PID 1 or a shim).
	PhaseAttrs = 4
	// statusKilled in a status record's flags: the shim killed the
	// command's tree (informative only: the supervisor decides kills from
	// its own timer). statusAgain: the shim waits on the same socket for
	// another exec.
	statusKilled       = 1
	statusAgain        = 2
	SessionReadyByte   = 'R'
	SessionAbortByte   = 'A'
	SessionReadyWithin = 10 * time.Second
)

// The offsets of the fields of struct cordon_req (req*) and struct
// cordon_status (st*).
const (
	reqMagic   = 0
	reqVersion = 4
	reqType    = 6
	reqID      = 8
	reqFlags   = 16
	reqSig     = 20
	reqNargv   = 24
	reqNenv    = 28
	reqLen     = 32
	stMagic    = 0
	stVersion  = 4
	stPhase    = 8
	stErr      = 12
	stWstatus  = 16
	stFlags    = 20
	stUtime    = 24
	stStime    = 32
	stMaxRSS   = 40
)

// EncodeExec builds an EXEC request: the header, then cwd, argv and env,
// each NUL-terminated.
// For a TTY exec, size is the terminal's cols<<16 | rows (0: unknown).
func EncodeExec(id uint64, flags uint32, size uint32, cwd string, argv, env []string) ([]byte, error) {
	var payload strings.Builder
	for _, s := range append(append([]string{cwd}, argv...), env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%w: a NUL byte in the command, its environment or its directory", runner.ErrBadRequest)
		}
		payload.WriteString(s)
		payload.WriteByte(0)
	}
	if payload.Len() > protoMaxPayload {
		return nil, fmt.Errorf("%w: the command and its environment take %d bytes; a session exec takes at most %d", runner.ErrBadRequest, payload.Len(), protoMaxPayload)
	}
	b := header(protoReqExec, id, flags, int32(size), uint32(len(argv)), uint32(len(env)), uint32(payload.Len()))
	return append(b, payload.String()...), nil
}

// EncodeSpare builds a SPARE request: fork one shim per socket attached.
func EncodeSpare() []byte {
	return header(protoReqSpare, 0, 0, 0, 0, 0, 0)
}

// EncodeSignal builds a SIGNAL request for exec id.
func EncodeSignal(id uint64, sig int32) []byte {
	return header(protoReqSignal, id, 0, sig, 0, 0, 0)
}

func header(typ uint16, id uint64, flags uint32, sig int32, nargv, nenv, n uint32) []byte {
	b := make([]byte, protoHeaderSize)
	le := binary.NativeEndian
	le.PutUint32(b[reqMagic:], protoReqMagic)
	le.PutUint16(b[reqVersion:], protoVersion)
	le.PutUint16(b[reqType:], typ)
	le.PutUint64(b[reqID:], id)
	le.PutUint32(b[reqFlags:], flags)
	le.PutUint32(b[reqSig:], uint32(sig))
	le.PutUint32(b[reqNargv:], nargv)
	le.PutUint32(b[reqNenv:], nenv)
	le.PutUint32(b[reqLen:], n)
	return b
}

// ExecStatus is what a shim reports about its exec. It comes from inside
// the sandbox, so it is untrusted: decodeStatus checks it, and the
// supervisor decides timeouts and kills from its own state.
type ExecStatus struct {
	Phase    int32
	Errno    int32
	Wstatus  int32
	Again    bool // the shim serves another exec (statusAgain)
	UtimeUS  int64
	StimeUS  int64
	MaxRSSKB int64
}

// DecodeStatus checks and decodes one status record. Every field is
// checked against what a shim can write: a known phase, an errno, only the
// flags it sets, CPU times and a peak RSS that are not negative, and, for a
// command that ran, the wait status of a process that ended (an exit code,
// or a signal that exists); anything else is a shim that does not follow
// the protocol, and the exec's outcome is not taken from it.
func DecodeStatus(b []byte) (ExecStatus, error) {
	le := binary.NativeEndian
	if len(b) != ProtoStatusSize || le.Uint32(b[stMagic:]) != protoStatusMagic || le.Uint32(b[stVersion:]) != protoVersion {
		return ExecStatus{}, fmt.Errorf("malformed status record (%d bytes)", len(b))
	}
	flags := le.Uint32(b[stFlags:])
	st := ExecStatus{
		Phase:    int32(le.Uint32(b[stPhase:])),
		Errno:    int32(le.Uint32(b[stErr:])),
		Wstatus:  int32(le.Uint32(b[stWstatus:])),
		Again:    flags&statusAgain != 0,
		UtimeUS:  int64(le.Uint64(b[stUtime:])),
		StimeUS:  int64(le.Uint64(b[stStime:])),
		MaxRSSKB: int64(le.Uint64(b[stMaxRSS:])),
	}
	switch {
	case st.Phase < PhaseRan || st.Phase > PhaseAttrs || st.Errno < 0 || st.Errno > 4095:
		return ExecStatus{}, fmt.Errorf("status record out of range (phase %d, errno %d)", st.Phase, st.Errno)
	case flags&^(statusKilled|statusAgain) != 0:
		return ExecStatus{}, fmt.Errorf("status record with unknown flags %#x", flags)
	case st.UtimeUS < 0 || st.StimeUS < 0 || st.MaxRSSKB < 0:
		return ExecStatus{}, fmt.Errorf("status record with a negative usage (user %d us, system %d us, max RSS %d KiB)", st.UtimeUS, st.StimeUS, st.MaxRSSKB)
	case st.Phase == PhaseRan && !endedWaitStatus(st.Wstatus):
		return ExecStatus{}, fmt.Errorf("status record with wait status %#x, which is not that of an ended process", st.Wstatus)
	}
	return st, nil
}

// endedWaitStatus reports whether ws is the wait status of a process that
// ended: an exit code (0-255 in bits 8-15), or a signal from 1 to the
// last real-time signal (with or without the core-dump bit), and no other
// bit set.
func endedWaitStatus(ws int32) bool {
	const sigrtmax = 64
	if ws&^0xffff != 0 {
		return false
	}
	sig := ws & 0x7f
	if sig == 0 {
		return true // exited: the code is bits 8-15
	}
	return ws&^0xff == 0 && sig <= sigrtmax
}
