package broker

import "golang.org/x/sys/unix"

// nativeArch is AUDIT_ARCH_AARCH64.
const nativeArch = 0xc00000b7

// arm64 has only the *at calls (and renameat).
var archCalls = map[int32]sysc{
	unix.SYS_RENAMEAT: {"renameat", func(b *Broker, c *call, a [6]uint64) result {
		return b.rename(c, "renameat", a, 0, 2, 0)
	}},
}
