//go:build linux || darwin

package runner

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/containerd/console"
	"golang.org/x/sys/unix"
)

// TestCopyKeys drives a real pty: every ^C the terminal's line discipline
// turns into SIGINT is reported, and none when the command switched ISIG
// off (an editor in raw mode reads ^C as a key).
func TestCopyKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		isig bool
		want int
	}{{"ISIG on", true, 2}, {"ISIG off", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			master, slaveName, err := console.NewPty()
			if err != nil {
				t.Skipf("no pty: %v", err)
			}
			defer master.Close()
			slave, err := os.OpenFile(slaveName, os.O_RDWR|unix.O_NOCTTY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer slave.Close()
			tio, err := unix.IoctlGetTermios(int(slave.Fd()), ioctlGetTermios)
			if err != nil {
				t.Fatal(err)
			}
			if tc.isig {
				tio.Lflag |= unix.ISIG
			} else {
				tio.Lflag &^= unix.ISIG
			}
			tio.Lflag &^= unix.ICANON | unix.ECHO
			if err := unix.IoctlSetTermios(int(slave.Fd()), ioctlSetTermios, tio); err != nil {
				t.Fatal(err)
			}
			dup, err := unix.Dup(int(master.Fd()))
			if err != nil {
				t.Fatal(err)
			}
			m := os.NewFile(uintptr(dup), "master")
			defer m.Close()
			keys := make(chan struct{}, 8)
			CopyKeys(m, strings.NewReader("a\x03b\x03c"), keys)
			if len(keys) != tc.want {
				t.Fatalf("reported %d ^C, want %d", len(keys), tc.want)
			}
			if !tc.isig {
				got := make([]byte, 5)
				if _, err := io.ReadFull(slave, got); err != nil || string(got) != "a\x03b\x03c" {
					t.Fatalf("the terminal got %q (%v), want every key", got, err)
				}
			}
		})
	}
}
