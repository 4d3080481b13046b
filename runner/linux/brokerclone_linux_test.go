package linux

import (
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// TestBrokerCloneWatched: the brokered filter notifies exactly the clones
// that make a thread without CLONE_FS (its own umask, which the broker
// then stops keeping: internal/broker/cwd_linux.go), keeps every other clone the profile allows in
// the kernel, and still refuses what the profile refuses (a namespace
// flag). A clone rule of a shape it cannot split has every clone it
// allows notified.
func TestBrokerCloneWatched(t *testing.T) {
	const ns = 0x7E020000 // spec's seccompCloneNamespaceFlags: the profile's clone rule
	pthread := uint64(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM)
	raw := uint64(unix.CLONE_VM | unix.CLONE_SIGHAND | unix.CLONE_THREAD)
	fork := uint64(unix.SIGCHLD)
	vfork := uint64(unix.CLONE_VM | unix.CLONE_VFORK | unix.SIGCHLD)
	rows := []struct {
		name string
		rule *configs.Syscall
		want map[uint64]configs.Action // flags -> action; absent: no rule matches
	}{
		{"profile", &configs.Syscall{Name: "clone", Action: configs.Allow, Args: []*configs.Arg{{Index: 0, Value: ns, Op: configs.MaskEqualTo}}},
			map[uint64]configs.Action{pthread: configs.Allow, fork: configs.Allow, vfork: configs.Allow, unix.CLONE_FS: configs.Allow, raw: configs.Notify, raw | unix.CLONE_NEWNS: 0}},
		{"unconditional", &configs.Syscall{Name: "clone", Action: configs.Allow},
			map[uint64]configs.Action{pthread: configs.Allow, fork: configs.Allow, raw: configs.Notify, unix.CLONE_NEWNS: configs.Allow}},
		{"other shape", &configs.Syscall{Name: "clone", Action: configs.Allow, Args: []*configs.Arg{{Index: 0, Value: raw, Op: configs.NotEqualTo}}},
			map[uint64]configs.Action{pthread: configs.Notify, raw: 0}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			rules := watchClone(r.rule)
			for flags, want := range r.want {
				var got configs.Action
				n := 0
				for _, s := range rules {
					if matches(s, flags) {
						got = s.Action
						n++
					}
				}
				if n > 1 {
					t.Errorf("flags %#x: %d rules match", flags, n)
				}
				if got != want {
					t.Errorf("flags %#x: action %v, want %v", flags, got, want)
				}
			}
		})
	}
	other := &configs.Syscall{Name: "clone", Action: configs.Errno}
	if got := watchClone(other); len(got) != 1 || got[0] != other {
		t.Errorf("a refusing clone rule was changed: %+v", got)
	}
}

// matches evaluates s's conditions on the first argument (flags).
func matches(s *configs.Syscall, flags uint64) bool {
	for _, a := range s.Args {
		switch a.Op {
		case configs.MaskEqualTo:
			if flags&a.Value != a.ValueTwo {
				return false
			}
		case configs.NotEqualTo:
			if flags == a.Value {
				return false
			}
		default:
			return false
		}
	}
	return true
}
