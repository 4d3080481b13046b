package sessiond

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// The reasons a client gives, in its session_gone message, for a session it
// does not send a request to. cmd/cordon's C client words them the same
// (cmd/cordon/execproto_linux.h, EXEC_WHY_*); its tests run both clients
// and compare what they print.
const (
	WhyNoStateDir     = "cordon's state directory is missing or not private"
	WhyPathTooLong    = "cordon's state directory path is too long"
	WhyNeverStarted   = "no session was ever started"
	WhyNoSuchSession  = "no such session"
	WhySocketTooLong  = "its socket path is too long"
	WhySupervisorGone = "its supervisor is gone"
	WhyNoSocket       = "no socket"
	WhyNoCred         = "its server's credentials cannot be read"
	WhyOtherUID       = "its socket is served by another user"
	WhyNoInfo         = "its info.json has no supervisor pid"
	WhyNotSupervisor  = "its socket is not served by its supervisor"
	WhyInSandbox      = "its socket is served from inside a sandbox, not by its supervisor"
	WhyHungUp         = "it hung up"
	WhyEnded          = "it ended while the command ran"
	WhyMalformed      = "its reply was malformed"
)

// GoneError is a session a client cannot use: Why is one of the Why*
// reasons. It matches ErrNotRunning.
type GoneError struct {
	Name, Why string
}

func (e *GoneError) Error() string {
	return "session_gone: session " + e.Name + " is not running (" + e.Why + "); start it with: cordon session start --name " + e.Name
}

// Is makes a GoneError match ErrNotRunning.
func (e *GoneError) Is(target error) bool { return target == ErrNotRunning }

// DialExec connects to session name's socket under the state directory
// stateDir, creating nothing on the way (every directory must be the
// caller's own and not writable by others), and checks that the session's
// supervisor serves it (CheckServer). Its error is a *GoneError.
func DialExec(stateDir, name string) (*net.UnixConn, error) {
	gone := func(why string) (*net.UnixConn, error) { return nil, &GoneError{Name: name, Why: why} }
	if checkPrivate(stateDir) != nil {
		return gone(WhyNoStateDir)
	}
	sessions := filepath.Join(stateDir, "sessions")
	if len(sessions) >= 4096 {
		return gone(WhyPathTooLong)
	}
	if checkPrivate(sessions) != nil {
		return gone(WhyNeverStarted)
	}
	dir := filepath.Join(sessions, name)
	if len(dir) >= 4096 {
		return gone(WhyPathTooLong)
	}
	if checkPrivate(dir) != nil {
		return gone(WhyNoSuchSession)
	}
	sock := filepath.Join(dir, "sock")
	if len(sock) >= 108 { // sockaddr_un's sun_path, with its NUL
		return gone(WhySocketTooLong)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return gone(WhySupervisorGone)
		}
		return gone(WhyNoSocket)
	}
	if why := serverWhy(c, dir); why != "" {
		c.Close()
		return gone(why)
	}
	return c, nil
}

// EncodeExec builds an exec request: options, the command, its environment.
func EncodeExec(opts map[string]string, argv, env []string) ([]byte, error) {
	return encodeRequest(reqExec, opts, argv, env)
}

// DecodeRequest decodes a whole request as the server reads it: the
// header, then as many payload bytes as it announces.
func DecodeRequest(b []byte) (typ uint16, opts map[string]string, argv, env []string, err error) {
	if len(b) < reqHeader {
		_, _, _, _, _, err = decodeHeader(b)
		return 0, nil, nil, nil, err
	}
	typ, no, na, ne, n, err := decodeHeader(b[:reqHeader])
	if err != nil {
		return 0, nil, nil, nil, err
	}
	if uint64(len(b)-reqHeader) < uint64(n) {
		return 0, nil, nil, nil, io.ErrUnexpectedEOF // the server would wait for the rest, then see EOF
	}
	r, err := decodePayload(typ, no, na, ne, b[reqHeader:reqHeader+int(n)])
	if err != nil {
		return 0, nil, nil, nil, err
	}
	return r.typ, r.opts, r.argv, r.env, nil
}

// EncodeResponse builds a response: exit code, message, JSON report.
func EncodeResponse(code int, msg string, report []byte) []byte {
	return encodeResponse(code, msg, report)
}

// ReadResponse reads a response: an error matching ErrProtocol for a
// malformed one (a bad header, an exit code outside 0-255, lengths beyond
// the cap), another for one cut short.
func ReadResponse(r io.Reader) (code int, msg string, report []byte, err error) {
	return readResponse(r)
}

// SignalFrame is the frame that asks the server to deliver sig to the exec.
func SignalFrame(sig int) []byte { return frame(sigMagic, uint32(sig)) }

// WinchFrame is the frame that gives the exec's terminal a new size.
func WinchFrame(cols, rows uint16) []byte { return frame(winchMagic, uint32(cols)<<16|uint32(rows)) }

func frame(magic, v uint32) []byte {
	b := make([]byte, sigFrame)
	binary.NativeEndian.PutUint32(b[0:], magic)
	binary.NativeEndian.PutUint32(b[4:], v)
	return b
}

// serverWhy returns "" when the server of c, a connection to the socket of
// the session whose directory is dir, is that session's supervisor: the
// caller's uid, the pid the session's info.json records, and a process of
// the caller's PID namespace (one pid on its NSpid line; a process inside a
// sandbox has more). Otherwise it returns the reason.
func serverWhy(c *net.UnixConn, dir string) string {
	cred, err := peerCred(c)
	if err != nil {
		return WhyNoCred
	}
	if int(cred.Uid) != os.Geteuid() {
		return WhyOtherUID
	}
	pid := infoPID(dir)
	if pid <= 0 {
		return WhyNoInfo
	}
	if int(cred.Pid) != pid {
		return WhyNotSupervisor
	}
	if !inThisPIDNamespace(pid) {
		return WhyInSandbox
	}
	return ""
}
