package sessiond

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	msg, err := encodeRequest(reqExec, map[string]string{"cwd": "/w", "timeout": "5s"}, []string{"sh", "-c", "echo hi"}, []string{"PATH=/bin", "A=b=c"})
	if err != nil {
		t.Fatal(err)
	}
	typ, no, na, ne, n, err := decodeHeader(msg[:reqHeader])
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodePayload(typ, no, na, ne, msg[reqHeader:reqHeader+int(n)])
	if err != nil {
		t.Fatal(err)
	}
	if r.typ != reqExec || r.opts["cwd"] != "/w" || r.opts["timeout"] != "5s" ||
		strings.Join(r.argv, "|") != "sh|-c|echo hi" || strings.Join(r.env, "|") != "PATH=/bin|A=b=c" {
		t.Fatalf("decoded %+v", r)
	}
}

// Hostile or broken requests are refused with ErrProtocol, never
// misread.
func TestRequestRefusals(t *testing.T) {
	good, _ := encodeRequest(reqExec, nil, []string{"true"}, nil)
	le := binary.NativeEndian
	mutate := func(f func(h []byte)) []byte {
		h := bytes.Clone(good[:reqHeader])
		f(h)
		return h
	}
	for _, c := range []struct {
		name string
		h    []byte
	}{
		{"short", good[:10]},
		{"magic", mutate(func(h []byte) { le.PutUint32(h[0:], 0xdeadbeef) })},
		{"version", mutate(func(h []byte) { le.PutUint16(h[4:], 9) })},
		{"huge payload", mutate(func(h []byte) { le.PutUint32(h[20:], maxPayload+1) })},
		{"more strings than bytes", mutate(func(h []byte) { le.PutUint32(h[12:], 1000) })},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, _, _, _, err := decodeHeader(c.h); !errors.Is(err, ErrProtocol) {
				t.Fatalf("got %v, want ErrProtocol", err)
			}
		})
	}
	for _, c := range []struct {
		name    string
		payload string
		nopts   uint32
		nargv   uint32
	}{
		{"missing terminator", "true", 0, 1},
		{"count mismatch", "a\x00b\x00", 0, 1},
		{"option without =", "cwd\x00true\x00", 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := decodePayload(reqExec, c.nopts, c.nargv, 0, []byte(c.payload)); !errors.Is(err, ErrProtocol) {
				t.Fatalf("got %v, want ErrProtocol", err)
			}
		})
	}
	if _, err := encodeRequest(reqExec, nil, []string{"a\x00b"}, nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("a NUL in argv: %v", err)
	}
}

func TestCheckName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"work", true}, {"a.b_c-1", true}, {"W9", true},
		{"", false}, {"-x", false}, {".hidden", false}, {"a/b", false}, {"../x", false}, {"a b", false},
		{strings.Repeat("x", 65), false}, {"x\x00", false},
	} {
		if err := CheckName(c.name); (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadName)) {
			t.Errorf("CheckName(%q) = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
