package netguard

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// TestLastRequestAfterABody: a request with a body (a length, chunks, or
// Expect) is the last the guard forwards on a connection, and its head
// asks the server to close: one "Connection: close" replaces every
// Connection field the client sent, every other byte kept; a request
// without one is forwarded as sent, and the connection goes on.
func TestLastRequestAfterABody(t *testing.T) {
	for _, tt := range []struct {
		name, head string
		want       string // the head forwarded; "" when kept as sent
	}{
		{"no body", "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n", ""},
		{"length 0", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", ""},
		{"length, no Connection", "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 55\r\n\r\n",
			"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 55\r\nConnection: close\r\n\r\n"},
		{"length, keep-alive replaced in place", "POST /x HTTP/1.1\r\nHost: a\r\nconnection: Keep-Alive\r\nContent-Length: 3\r\nX: y\r\n\r\n",
			"POST /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 3\r\nX: y\r\n\r\n"},
		{"two Connection fields", "POST / HTTP/1.1\r\nCONNECTION: keep-alive\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 3\r\n\r\n",
			"POST / HTTP/1.1\r\nConnection: close\r\nHost: a\r\nUpgrade: h2c\r\nContent-Length: 3\r\n\r\n"},
		{"a close that is not the only option", "POST / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\nContent-Length: 3\r\n\r\n",
			"POST / HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: 3\r\n\r\n"},
		{"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
			"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"},
		{"expect, with a length", "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 55\r\n\r\n",
			"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 55\r\nConnection: close\r\n\r\n"},
		{"expect alone", "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
			"GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"},
		{"HTTP/1.0 GET with a body, keep-alive", "GET / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\n",
			"GET / HTTP/1.0\r\nHost: a\r\nConnection: close\r\nContent-Length: 5\r\n\r\n"},
		{"bare LF kept", "POST / HTTP/1.1\nHost: a\nConnection: keep-alive\nContent-Length: 1\n\n",
			"POST / HTTP/1.1\nHost: a\nConnection: close\nContent-Length: 1\n\n"},
		{"absolute target naming connection:", "POST http://a/connection: HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
			"POST http://a/connection: HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nConnection: close\r\n\r\n"},
		{"a field named like it", "POST / HTTP/1.1\r\nHost: a\r\nX-Connection: keep-alive\r\nContent-Length: 1\r\n\r\n",
			"POST / HTTP/1.1\r\nHost: a\r\nX-Connection: keep-alive\r\nContent-Length: 1\r\nConnection: close\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			head, _, err := readRequestHead(bufio.NewReader(bytes.NewReader([]byte(tt.head + "body"))))
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
			if err != nil {
				t.Fatal(err)
			}
			if last := bodyFollows(req); last != (tt.want != "") {
				t.Fatalf("bodyFollows = %v", last)
			}
			if tt.want == "" {
				return
			}
			got := lastRequest(head)
			if string(got) != tt.want {
				t.Fatalf("forwarded\n%q\nwant\n%q", got, tt.want)
			}
			// The server reads it as the guard does, and is asked to close.
			h, rest, err := parseHead(got)
			if err != nil || len(rest) != 0 {
				t.Fatalf("the rewritten head reads as %+v, %q, %v", h, rest, err)
			}
			r2, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(got)))
			if err != nil {
				t.Fatal(err)
			}
			if !r2.Close || r2.ContentLength != req.ContentLength {
				t.Fatalf("Go's reader: close %v, length %d", r2.Close, r2.ContentLength)
			}
		})
	}
}
