package ociruntime

import (
	"errors"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
)

// notified reports whether out notifies name, and whether it refuses it
// with ENOSYS.
func notified(out *configs.Seccomp, name string) (notify, enosys bool) {
	for _, s := range out.Syscalls {
		if s == nil || s.Name != name {
			continue
		}
		notify = notify || s.Action == configs.Notify
		enosys = enosys || (s.Action == configs.Errno && s.ErrnoRet != nil && *s.ErrnoRet == 38)
	}
	return notify, enosys
}

// TestBrokerSeccomp: the broker's calls are notified only where the
// container's profile allows them outright; a refused call stays refused
// (the broker would perform it), a conditional one fails create, and the
// calls that would go past the broker fail with ENOSYS.
func TestBrokerSeccomp(t *testing.T) {
	errno := configs.Errno
	tests := []struct {
		name                 string
		in                   *configs.Seccomp
		wantNotify, wantNone []string
		wantErr              bool
	}{
		{name: "no profile", in: nil, wantNotify: []string{"openat", "mkdirat", "renameat2", "unlinkat"}},
		// chdir is never notified (the broker reads a working directory
		// per call): notified, the init's chdir would come before the
		// exec FIFO's open.
		{name: "chdir stays the profile's", in: &configs.Seccomp{DefaultAction: errno, Syscalls: []*configs.Syscall{
			{Name: "openat", Action: configs.Allow}, {Name: "chdir", Action: configs.Allow}, {Name: "fchdir", Action: configs.Allow}}},
			wantNotify: []string{"openat"}, wantNone: []string{"chdir", "fchdir"}},
		{name: "allowed outright", in: &configs.Seccomp{DefaultAction: errno, Syscalls: []*configs.Syscall{
			{Name: "openat", Action: configs.Allow}, {Name: "mkdirat", Action: configs.Allow}}},
			wantNotify: []string{"openat", "mkdirat"}, wantNone: []string{"unlinkat", "renameat2"}},
		{name: "refused by the profile stays refused", in: &configs.Seccomp{DefaultAction: configs.Allow, Syscalls: []*configs.Syscall{
			{Name: "mkdirat", Action: errno}}},
			wantNotify: []string{"openat"}, wantNone: []string{"mkdirat"}},
		{name: "conditional", in: &configs.Seccomp{DefaultAction: errno, Syscalls: []*configs.Syscall{
			{Name: "renameat2", Action: configs.Allow, Args: []*configs.Arg{{Index: 4, Value: 0, Op: configs.EqualTo}}}}},
			wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := brokerSeccomp(tc.in, "/run/x.sock")
			if tc.wantErr {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("err %v, want ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.ListenerPath != "/run/x.sock" {
				t.Errorf("listener path %q", out.ListenerPath)
			}
			for _, n := range tc.wantNotify {
				if notify, _ := notified(out, n); !notify {
					t.Errorf("%s is not notified", n)
				}
			}
			for _, n := range tc.wantNone {
				if notify, _ := notified(out, n); notify {
					t.Errorf("%s is notified, but the profile does not allow it", n)
				}
			}
			for _, n := range unbrokered {
				if _, enosys := notified(out, n); !enosys {
					t.Errorf("%s does not fail with ENOSYS", n)
				}
			}
		})
	}
}

// TestInitFIFOPath: only an open of a /proc fd link is taken for the
// init's exec FIFO.
func TestInitFIFOPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/proc/self/fd/7", true},
		{"/proc/thread-self/fd/7", true},
		{"/proc/12/task/13/fd/7", true},
		{"/12/task/13/fd/7", true},
		{"/etc/app.conf", false},
		{"/proc/self/fd/7/../../root/x", false},
		{"/repo/proc/self/fd/7", false},
		{"fd/7", false},
	}
	for _, tc := range tests {
		if got := fifoPath().MatchString(tc.path); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.path, got, tc.want)
		}
	}
}
