package main

import (
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-run/cordon/cmd/cordon/internal/sessiond"
)

// What the C client encodes, the Go server decodes to what the command
// line says, and the C client leaves to the Go client exactly what it does
// not handle: the Go parser's refusals, -h, and nothing else.
func TestExecWireCEncodesGoDecodes(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "EMPTY=", "UNICODE=ü → ok", "EQ=a=b"}
	cases := []struct {
		name string
		args []string
		opts map[string]string // nil: the C client leaves it to the Go client
		argv []string
	}{
		{"plain", []string{"exec", "s1", "--", "true"}, map[string]string{"wd": wd}, []string{"true"}},
		{"no dashes", []string{"exec", "s1", "echo", "a b", "--report", "x"}, map[string]string{"wd": wd}, []string{"echo", "a b", "--report", "x"}},
		{"every flag", []string{"exec", "--timeout", "5s", "s.1", "--memory=1GiB", "-cwd", "/tmp", "--detach", "--report", "r.json", "--json", "--sandbox", "--", "sh", "-c", "exit 3"},
			map[string]string{"timeout": "5s", "memory": "1GiB", "cwd": "/tmp", "detach": "1", "report": "1", "sandbox": "1"}, []string{"sh", "-c", "exit 3"}},
		{"json alone", []string{"exec", "s1", "-json", "--", "true"}, map[string]string{"wd": wd, "report": "1"}, []string{"true"}},
		{"an empty argument", []string{"exec", "s1", "--", "printf", ""}, map[string]string{"wd": wd}, []string{"printf", ""}},
		{"help", []string{"exec", "-h", "s1", "--", "true"}, nil, nil},
		{"unknown flag", []string{"exec", "s1", "--tty", "--", "true"}, nil, nil},
		{"missing value", []string{"exec", "s1", "--timeout"}, nil, nil},
		{"bad name", []string{"exec", "-bad", "--", "true"}, nil, nil},
		{"name with a slash", []string{"exec", "a/b", "--", "true"}, nil, nil},
		{"no command", []string{"exec", "s1", "--"}, nil, nil},
		{"empty command", []string{"exec", "s1", "--", ""}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, ok := cExecRequest(tc.args, env)
			if tc.opts == nil {
				if ok {
					t.Fatalf("the C client took %q; the Go client should have", tc.args)
				}
				if f, _, msg := parseExecFlags(tc.args[1:]); f != nil && msg == "" && tc.name != "empty command" {
					t.Fatalf("the C client left %q to the Go client, which accepts it", tc.args)
				}
				return
			}
			if !ok {
				t.Fatalf("the C client left %q to the Go client", tc.args)
			}
			typ, opts, argv, gotEnv, err := sessiond.DecodeRequest(req)
			if err != nil || typ != sessiond.WireReqExec || !reflect.DeepEqual(opts, tc.opts) || !reflect.DeepEqual(argv, tc.argv) ||
				!reflect.DeepEqual(gotEnv, env) {
				t.Fatalf("decoded type %d opts %v argv %q env %q, %v; want opts %v argv %q env %q", typ, opts, argv, gotEnv, err, tc.opts, tc.argv, env)
			}
			// The Go client's parse of the same line sends the same.
			f, _, msg := parseExecFlags(tc.args[1:])
			if f == nil || msg != "" || !reflect.DeepEqual(f.argv, tc.argv) {
				t.Fatalf("the Go client parses %q as %+v %q", tc.args, f, msg)
			}
		})
	}
}

// What the Go server encodes, the C client accepts exactly when the Go
// client does: a response header with an exit code of 0-255 and a message
// and report of at most the cap in all, nothing else.
func TestExecWireGoEncodesCDecodes(t *testing.T) {
	header := func(magic, version, code, ml, rl uint32) []byte {
		h := make([]byte, sessiond.WireRespHeader)
		le := binary.NativeEndian
		for i, v := range []uint32{magic, version, code, ml, rl} {
			le.PutUint32(h[4*i:], v)
		}
		return h
	}
	m, v, max := uint32(sessiond.WireRespMagic), uint32(sessiond.WireVersion), uint32(sessiond.WireMaxResponse)
	cases := []struct {
		name string
		h    []byte
		ok   bool
	}{
		{"encoded", sessiond.EncodeResponse(3, "msg\n", []byte("{}\n"))[:sessiond.WireRespHeader], true},
		{"exit 255", sessiond.EncodeResponse(255, "", nil), true},
		{"exit 0, the cap", header(m, v, 0, max-1, 1), true},
		{"exit 256", sessiond.EncodeResponse(256, "", nil), false},
		{"exit -1", sessiond.EncodeResponse(-1, "", nil), false},
		{"bad magic", header(m+1, v, 0, 0, 0), false},
		{"bad version", header(m, v+1, 0, 0, 0), false},
		{"above the cap", header(m, v, 0, max, 1), false},
		{"lengths that wrap", header(m, v, 0, 0x10, 0xfffffff8), false},
		{"huge lengths", header(m, v, 0, 0xffffffff, 0xffffffff), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := sessiond.ReadResponse(strings.NewReader(string(tc.h)))
			goOK := !errors.Is(err, sessiond.ErrProtocol)
			if c := cReplyOK(tc.h); c != tc.ok || goOK != tc.ok {
				t.Fatalf("header %x: the C client accepts it: %v, the Go client: %v (%v); want %v", tc.h, c, goOK, err, tc.ok)
			}
		})
	}
}
