package runner

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// The wire format between the session supervisor and the fork server
// (sessioninit_linux.c); the constants and layouts must match it.
const (
	sessionInitArg   = "cordon-session-init"
	protoReqMagic    = 0x58445243 // "CRDX"
	protoStatusMagic = 0x53445243 // "CRDS"
	protoVersion     = 2
	protoReqExec     = 1
	protoReqSignal   = 2
	protoReqSpare    = 3
	// protoMaxSpares is how many shim sockets one SPARE request carries
	// at most (at most the fork server's MAX_FDS).
	protoMaxSpares  = 5
	protoFlagDetach = 1
	protoFlagTTY    = 2
	// protoFlagCgroup: the request carries two more descriptors, the
	// exec's leaf cgroup.procs and the shims' home (sessionleaf_linux.go).
	protoFlagCgroup  = 4
	protoSigKillTree = -1
	protoHeaderSize  = 40
	protoStatusSize  = 48
	protoMaxPayload  = 8 << 20
	phaseRan         = 0
	phaseChdir       = 1
	phaseExec        = 2
	phaseShim        = 3
	// phaseAttrs: the shim could not restore the process attributes its
	// command inherits (a command lowered a hard limit or raised the
	// nice value of PID 1 or a shim).
	phaseAttrs = 4
	// statusAgain in a status record's flags: the shim waits on the same
	// socket for another exec.
	statusAgain        = 2
	sessionReadyByte   = 'R'
	sessionReadyWithin = 10 * time.Second
)

// encodeExec builds an EXEC request: the header, then cwd, argv and env,
// each NUL-terminated.
// For a TTY exec, size is the terminal's cols<<16 | rows (0: unknown).
func encodeExec(id uint64, flags uint32, size uint32, cwd string, argv, env []string) ([]byte, error) {
	var payload strings.Builder
	for _, s := range append(append([]string{cwd}, argv...), env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%w: a NUL byte in the command, its environment or its directory", ErrBadRequest)
		}
		payload.WriteString(s)
		payload.WriteByte(0)
	}
	if payload.Len() > protoMaxPayload {
		return nil, fmt.Errorf("%w: the command and its environment take %d bytes; a session exec takes at most %d", ErrBadRequest, payload.Len(), protoMaxPayload)
	}
	b := header(protoReqExec, id, flags, int32(size), uint32(len(argv)), uint32(len(env)), uint32(payload.Len()))
	return append(b, payload.String()...), nil
}

// encodeSpare builds a SPARE request: fork one shim per socket attached.
func encodeSpare() []byte {
	return header(protoReqSpare, 0, 0, 0, 0, 0, 0)
}

// encodeSignal builds a SIGNAL request for exec id.
func encodeSignal(id uint64, sig int32) []byte {
	return header(protoReqSignal, id, 0, sig, 0, 0, 0)
}

func header(typ uint16, id uint64, flags uint32, sig int32, nargv, nenv, n uint32) []byte {
	b := make([]byte, protoHeaderSize)
	le := binary.NativeEndian
	le.PutUint32(b[0:], protoReqMagic)
	le.PutUint16(b[4:], protoVersion)
	le.PutUint16(b[6:], typ)
	le.PutUint64(b[8:], id)
	le.PutUint32(b[16:], flags)
	le.PutUint32(b[20:], uint32(sig))
	le.PutUint32(b[24:], nargv)
	le.PutUint32(b[28:], nenv)
	le.PutUint32(b[32:], n)
	return b
}

// execStatus is what a shim reports about its exec. It comes from inside
// the sandbox, so it is untrusted: decodeStatus checks it, and the
// supervisor decides timeouts and kills from its own state.
type execStatus struct {
	phase    int32
	errno    int32
	wstatus  int32
	again    bool // the shim serves another exec (statusAgain)
	utimeUS  int64
	stimeUS  int64
	maxRSSKB int64
}

// decodeStatus checks and decodes one status record.
func decodeStatus(b []byte) (execStatus, error) {
	le := binary.NativeEndian
	if len(b) != protoStatusSize || le.Uint32(b[0:]) != protoStatusMagic || le.Uint32(b[4:]) != protoVersion {
		return execStatus{}, fmt.Errorf("malformed status record (%d bytes)", len(b))
	}
	st := execStatus{
		phase:    int32(le.Uint32(b[8:])),
		errno:    int32(le.Uint32(b[12:])),
		wstatus:  int32(le.Uint32(b[16:])),
		again:    le.Uint32(b[20:])&statusAgain != 0,
		utimeUS:  int64(le.Uint64(b[24:])),
		stimeUS:  int64(le.Uint64(b[32:])),
		maxRSSKB: int64(le.Uint64(b[40:])),
	}
	if st.phase < phaseRan || st.phase > phaseAttrs || st.errno < 0 || st.errno > 4095 {
		return execStatus{}, fmt.Errorf("status record out of range (phase %d, errno %d)", st.phase, st.errno)
	}
	return st, nil
}
