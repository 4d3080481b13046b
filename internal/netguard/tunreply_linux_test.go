package netguard

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDeviceFromReply: the tun helper's reply gives a Device only in its
// one shape (one byte, the DNS count, and at least the tun); any other
// reply is refused and every descriptor it carried is closed, so a helper
// that answers wrongly leaves nothing open in the supervisor.
func TestDeviceFromReply(t *testing.T) {
	fds := func(t *testing.T, n int) []int {
		t.Helper()
		var out []int
		for len(out) < n {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			out = append(out, p[0], p[1])
		}
		for _, fd := range out[n:] {
			unix.Close(fd)
		}
		return out[:n]
	}
	closed := func(fd int) bool {
		_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		return errors.Is(err, unix.EBADF)
	}
	t.Run("tun, one DNS socket, two forwards", func(t *testing.T) {
		sent := fds(t, 4)
		d, err := deviceFromReply([]byte{1}, unix.UnixRights(sent...))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if int(d.Tun.Fd()) != sent[0] || len(d.DNS) != 1 || int(d.DNS[0].Fd()) != sent[1] || len(d.Forward) != 2 {
			t.Fatalf("got %+v from %v", d, sent)
		}
	})
	for _, tc := range []struct {
		name string
		msg  []byte
		nfds int
		oob  func([]int) []byte
		want string
	}{
		{"no reply", nil, 0, nil, "no reply"},
		{"an error text", []byte("cannot open /dev/net/tun: EPERM"), 0, nil, "cannot open /dev/net/tun"},
		{"no count byte", nil, 2, nil, "malformed reply"},
		{"two bytes", []byte{0, 0}, 2, nil, "malformed reply"},
		{"more DNS sockets than descriptors", []byte{2}, 2, nil, "malformed reply"},
		{"DNS count takes the tun's place", []byte{1}, 1, nil, "malformed reply"},
		{"two control messages", []byte{0}, 2, func(f []int) []byte {
			return append(unix.UnixRights(f[0]), unix.UnixRights(f[1])...)
		}, "malformed reply"},
		{"not rights", []byte{0}, 0, func([]int) []byte {
			return unix.UnixCredentials(&unix.Ucred{Pid: 1})
		}, "malformed reply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := fds(t, tc.nfds)
			var oob []byte
			switch {
			case tc.oob != nil:
				oob = tc.oob(sent)
			case len(sent) > 0:
				oob = unix.UnixRights(sent...)
			}
			d, err := deviceFromReply(tc.msg, oob)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("deviceFromReply = %+v, %v; want an error with %q", d, err, tc.want)
			}
			for _, fd := range sent {
				if !closed(fd) {
					unix.Close(fd)
					t.Errorf("descriptor %d of the refused reply is still open", fd)
				}
			}
		})
	}
}
