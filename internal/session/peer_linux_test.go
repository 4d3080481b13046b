package session

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Dir.Stop sends its request only to the session's supervisor: a server
// at another pid than info.json records, or with no info.json, gets no
// byte and Stop fails with ErrNotSupervisor; the recorded one is asked.
func TestStopChecksTheServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pid   int // 0: no info.json
		want  error
		bytes bool
	}{
		{"its supervisor", os.Getpid(), nil, true},
		{"another pid", 1, ErrNotSupervisor, false},
		{"no info", 0, ErrNotSupervisor, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			name := "s1"
			if err := os.Mkdir(d.sessionDir(name), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.pid != 0 {
				if err := d.WriteInfo(Info{Name: name, PID: tc.pid}); err != nil {
					t.Fatal(err)
				}
			}
			l, err := d.Listen(name)
			if err != nil {
				t.Fatal(err)
			}
			var got int
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
				b := make([]byte, reqHeader)
				n, _ := io.ReadFull(c, b)
				got = n
				if n == reqHeader {
					_, _ = c.Write(encodeResponse(0, "", nil))
				}
			}()
			err = d.Stop(name)
			l.Close()
			wg.Wait()
			if !errors.Is(err, tc.want) || (got > 0) != tc.bytes {
				t.Fatalf("Stop: %v (want %v); the server got %d bytes", err, tc.want, got)
			}
			if tc.want != nil && !strings.Contains(err.Error(), name) {
				t.Fatalf("the error does not name the session: %v", err)
			}
		})
	}
}
