package spec

import (
	"math/rand/v2"
	"testing"
)

// TestSeccompIoctlRules evaluates the ioctl rules as the filter does (any
// rule matching allows): FS_IOC_SETFLAGS and FS_IOC32_SETFLAGS are
// refused whatever the command's upper half, everything else is allowed.
func TestSeccompIoctlRules(t *testing.T) {
	rules := seccompIoctlRules()
	allowed := func(cmd uint64) bool {
		for _, r := range rules {
			a := r.Args[0]
			if r.Names[0] != "ioctl" || a.Index != 1 {
				t.Fatalf("rule %+v", r)
			}
			if cmd&a.Value == a.ValueTwo {
				return true
			}
		}
		return false
	}
	for _, cmd := range []uint64{fsIocSetflags, fsIoc32Setflags, 1<<32 | fsIocSetflags, 0xffffffff00000000 | fsIoc32Setflags} {
		if allowed(cmd) {
			t.Errorf("ioctl %#x allowed", cmd)
		}
	}
	for _, cmd := range []uint64{0x5401, 0x80086601, 0x541b, 0x40086603, 0x400c6602, 0x00086602, 0} {
		if !allowed(cmd) {
			t.Errorf("ioctl %#x refused", cmd)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		cmd := r.Uint64()
		if low := cmd & 0xffffffff; allowed(cmd) == (low == fsIocSetflags || low == fsIoc32Setflags) {
			t.Fatalf("ioctl %#x: allowed %v", cmd, allowed(cmd))
		}
	}
}
