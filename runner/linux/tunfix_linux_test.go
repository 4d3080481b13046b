package linux

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTunFix: a refused allow list names the way out that works on the
// host: for a rootless user and a 0600 node, 0666 (chmod now, a udev rule
// for every boot) or root; a missing node, the tun module; root, the
// container's device.
func TestTunFix(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		mode uint32
		uid  int
		want []string
		not  string
	}{
		{"rootless, 0600", unix.EACCES, 0o600, 4242, []string{"mode 0600 here: make it 0666", "chmod 0666 /dev/net/tun", `KERNEL=="tun", MODE="0666"`, "or run cordon as root"}, "docker"},
		{"missing", unix.ENOENT, 0, 4242, []string{"modprobe tun", "docker run --device /dev/net/tun"}, "chmod"},
		{"root in a container", unix.EPERM, 0o666, 0, []string{"docker run --device /dev/net/tun"}, "chmod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tunFix(tc.err, tc.mode, tc.uid)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			if strings.Contains(got, tc.not) {
				t.Errorf("%q names %q, which does not help here", got, tc.not)
			}
		})
	}
}
