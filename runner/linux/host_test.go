package linux

import (
	"bufio"
	"strings"
	"testing"
)

func TestKernelAtLeast(t *testing.T) {
	tests := []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v769", true},
		{"5.12.0", true},
		{"5.12-rc1", true},
		{"5.11.22", false},
		{"4.19.0-26-amd64", false},
		{"10.0", true},
		{"garbage", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := kernelAtLeast(tt.release, 5, 12); got != tt.want {
			t.Errorf("kernelAtLeast(%q) = %v, want %v", tt.release, got, tt.want)
		}
	}
}

func TestSubmountsIn(t *testing.T) {
	const mountinfo = `22 1 0:21 / / rw - ext4 /dev/root rw
23 22 0:5 / /usr rw - ext4 /dev/a rw
24 23 0:6 / /usr/local/share\040data rw - ext4 /dev/b rw
25 22 0:7 / /usrx rw - ext4 /dev/c rw
26 22 0:8 / /home/u/a\134b rw - tmpfs t rw
`
	tests := []struct {
		dir  string
		want bool
	}{
		{"/usr", true},
		{"/usr/local", true},
		{"/usr/local/share data", false},
		{"/usrx", false},
		{"/home/u", true},
		{"/etc", false},
	}
	for _, tt := range tests {
		got, err := submountsIn(bufio.NewScanner(strings.NewReader(mountinfo)), tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("submountsIn(%q) = %v, want %v", tt.dir, got, tt.want)
		}
	}
	if got := unescapeMountinfo(`/a\040b\011c\134d\`); got != "/a b\tc\\d\\" {
		t.Errorf("unescape = %q", got)
	}
}
