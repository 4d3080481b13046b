package sessiond

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeRequest: whatever bytes a client sends, the server's decoder
// refuses them with ErrProtocol or returns a request that encodes back to
// one it decodes the same.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range []struct {
		typ       uint16
		opts      map[string]string
		argv, env []string
	}{
		{reqExec, map[string]string{"cwd": "/w", "timeout": "5s", "report": "1"}, []string{"sh", "-c", "echo hi"}, []string{"PATH=/bin", "A=b=c"}},
		{reqExec, nil, []string{"true"}, nil},
		{reqStop, nil, nil, nil},
		{reqExec, map[string]string{"tty": "1", "size": "80x24", "input": "6869"}, []string{""}, []string{"="}},
	} {
		b, err := encodeRequest(r.typ, r.opts, r.argv, r.env)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(make([]byte, reqHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequestBytes(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("refused without ErrProtocol: %v", err)
			}
			return
		}
		again, err := encodeRequest(r.typ, r.opts, r.argv, r.env)
		if err != nil {
			t.Fatalf("a decoded request %+v does not encode: %v", r, err)
		}
		r2, err := decodeRequestBytes(again)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("decoded %+v, re-encoded and decoded %+v, %v", r, r2, err)
		}
	})
}

// decodeRequestBytes decodes a request as the server reads it: the
// header, then as many payload bytes as the header says.
func decodeRequestBytes(b []byte) (*request, error) {
	if len(b) < reqHeader {
		_, _, _, _, _, err := decodeHeader(b)
		return nil, err
	}
	typ, no, na, ne, n, err := decodeHeader(b[:reqHeader])
	if err != nil {
		return nil, err
	}
	if uint64(len(b)-reqHeader) < uint64(n) {
		return nil, ErrProtocol // the server would wait for the rest, then see EOF
	}
	return decodePayload(typ, no, na, ne, b[reqHeader:reqHeader+int(n)])
}

// FuzzReadResponse: whatever a server answers, the Go client reads a
// response that encodes back to the bytes it consumed, or an error; it
// never takes more than maxResponse bytes of body.
func FuzzReadResponse(f *testing.F) {
	f.Add(encodeResponse(0, "", nil))
	f.Add(encodeResponse(125, "cordon: session_gone: session x is not running\n", []byte(`{"exit_code":125}`+"\n")))
	f.Add(encodeResponse(-1, "m", []byte("r")))
	f.Add(encodeResponse(255, "", []byte("{}")))
	huge := encodeResponse(0, "", nil)
	binary.NativeEndian.PutUint32(huge[12:], maxResponse)
	binary.NativeEndian.PutUint32(huge[16:], 1)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, b []byte) {
		rd := bytes.NewReader(b)
		code, msg, report, err := readResponse(rd)
		if err != nil {
			return
		}
		if len(msg)+len(report) > maxResponse || code < 0 || code > 255 {
			t.Fatalf("read exit code %d and a body of %d bytes; want 0-255 and at most %d", code, len(msg)+len(report), maxResponse)
		}
		// The header's last word is padding, which neither side reads.
		used := bytes.Clone(b[:len(b)-rd.Len()])
		copy(used[20:respHeader], make([]byte, 4))
		if again := encodeResponse(code, msg, report); !bytes.Equal(again, used) {
			t.Fatalf("read (%d, %q, %q) from %x; it encodes as %x", code, msg, report, used, again)
		}
	})
}
