package sessiond

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// The wire format on a session socket; the C clients of cmd/cordon speak it
// too, from cmd/cordon/execproto_linux.h, which cmd/cordon checks against
// the Wire* constants below when it builds.
//
// A client sends one request: a 32-byte header, then its payload of
// NUL-terminated strings (options as "key=value", argv, env). An exec
// request carries the client's fds 0, 1 and 2 (SCM_RIGHTS) on its first
// byte. While the exec runs the client may send 8-byte signal frames;
// closing its end cancels the exec. The server answers with one 24-byte
// response header, a message for the client's stderr, and the JSON report.
const (
	reqMagic    = 0x43445243 // "CRDC"
	respMagic   = 0x52445243 // "CRDR"
	sigMagic    = 0x47535243 // "CRSG"
	winchMagic  = 0x4e495743 // "CWIN"
	version     = 1
	reqExec     = 1
	reqStop     = 2
	reqPs       = 3
	reqKill     = 4
	reqHeader   = 32
	respHeader  = 24
	sigFrame    = 8
	maxPayload  = 8 << 20
	maxResponse = 16 << 20
)

// The protocol's numbers under exported names, for the build-time check of
// the C clients' header (cmd/cordon/execproto_linux.h) against them.
const (
	WireReqMagic    = reqMagic
	WireRespMagic   = respMagic
	WireSigMagic    = sigMagic
	WireWinchMagic  = winchMagic
	WireVersion     = version
	WireReqExec     = reqExec
	WireReqStop     = reqStop
	WireReqHeader   = reqHeader
	WireRespHeader  = respHeader
	WireSigFrame    = sigFrame
	WireMaxPayload  = maxPayload
	WireMaxResponse = maxResponse
)

// request is a decoded request header and payload.
type request struct {
	typ  uint16
	opts map[string]string
	argv []string
	env  []string
}

// encodeRequest builds a request (the Go client uses it; the C client
// builds the same bytes).
func encodeRequest(typ uint16, opts map[string]string, argv, env []string) ([]byte, error) {
	var b strings.Builder
	var nopts int
	for k, v := range opts {
		b.WriteString(k + "=" + v + "\x00")
		nopts++
	}
	for _, s := range append(append([]string{}, argv...), env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, fmt.Errorf("%w: a NUL byte in the request", ErrProtocol)
		}
		b.WriteString(s + "\x00")
	}
	if b.Len() > maxPayload {
		return nil, fmt.Errorf("%w: request of %d bytes; at most %d", ErrProtocol, b.Len(), maxPayload)
	}
	h := make([]byte, reqHeader)
	le := binary.NativeEndian
	le.PutUint32(h[0:], reqMagic)
	le.PutUint16(h[4:], version)
	le.PutUint16(h[6:], typ)
	le.PutUint32(h[8:], uint32(nopts))
	le.PutUint32(h[12:], uint32(len(argv)))
	le.PutUint32(h[16:], uint32(len(env)))
	le.PutUint32(h[20:], uint32(b.Len()))
	return append(h, b.String()...), nil
}

// decodeHeader checks a request header and returns its type, counts and
// payload length.
func decodeHeader(h []byte) (typ uint16, nopts, nargv, nenv, n uint32, err error) {
	le := binary.NativeEndian
	if len(h) != reqHeader || le.Uint32(h[0:]) != reqMagic || le.Uint16(h[4:]) != version {
		return 0, 0, 0, 0, 0, fmt.Errorf("%w: bad request header", ErrProtocol)
	}
	typ, nopts, nargv, nenv, n = le.Uint16(h[6:]), le.Uint32(h[8:]), le.Uint32(h[12:]), le.Uint32(h[16:]), le.Uint32(h[20:])
	if n > maxPayload || uint64(nopts)+uint64(nargv)+uint64(nenv) > uint64(n) {
		return 0, 0, 0, 0, 0, fmt.Errorf("%w: request payload of %d bytes with %d strings", ErrProtocol, n, nopts+nargv+nenv)
	}
	return typ, nopts, nargv, nenv, n, nil
}

// decodePayload splits the payload into options, argv and env.
func decodePayload(typ uint16, nopts, nargv, nenv uint32, p []byte) (*request, error) {
	parts := strings.Split(string(p), "\x00")
	if len(parts) == 0 || parts[len(parts)-1] != "" || uint64(len(parts)-1) != uint64(nopts)+uint64(nargv)+uint64(nenv) {
		return nil, fmt.Errorf("%w: payload does not hold %d strings", ErrProtocol, nopts+nargv+nenv)
	}
	parts = parts[:len(parts)-1]
	r := &request{typ: typ, opts: map[string]string{}}
	for _, kv := range parts[:nopts] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%w: option %q is not key=value", ErrProtocol, kv)
		}
		r.opts[k] = v
	}
	r.argv = parts[nopts : nopts+nargv]
	r.env = parts[nopts+nargv:]
	return r, nil
}

// encodeResponse builds the response: exit code, message, JSON report.
func encodeResponse(code int, msg string, report []byte) []byte {
	h := make([]byte, respHeader)
	le := binary.NativeEndian
	le.PutUint32(h[0:], respMagic)
	le.PutUint32(h[4:], version)
	le.PutUint32(h[8:], uint32(int32(code)))
	le.PutUint32(h[12:], uint32(len(msg)))
	le.PutUint32(h[16:], uint32(len(report)))
	return append(append(h, msg...), report...)
}

// readResponse reads a response from r.
func readResponse(r io.Reader) (code int, msg string, report []byte, err error) {
	h := make([]byte, respHeader)
	if _, err := io.ReadFull(r, h); err != nil {
		return 0, "", nil, err
	}
	le := binary.NativeEndian
	if le.Uint32(h[0:]) != respMagic || le.Uint32(h[4:]) != version {
		return 0, "", nil, fmt.Errorf("%w: bad response header", ErrProtocol)
	}
	c, ml, jl := le.Uint32(h[8:]), le.Uint32(h[12:]), le.Uint32(h[16:])
	if c > 255 {
		// As the C clients: an exit code is 0-255.
		return 0, "", nil, fmt.Errorf("%w: exit code %d out of range", ErrProtocol, int32(c))
	}
	if uint64(ml)+uint64(jl) > maxResponse {
		return 0, "", nil, fmt.Errorf("%w: response too large", ErrProtocol)
	}
	body := make([]byte, ml+jl)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, "", nil, err
	}
	return int(c), string(body[:ml]), body[ml:], nil
}
