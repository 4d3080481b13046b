package seccomp

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// asm assembles instructions {code, jt, jf, k} in the host's byte order,
// as Compile returns a program.
func asm(ins ...insn) []byte {
	b := make([]byte, 0, 8*len(ins))
	for _, in := range ins {
		b = binary.NativeEndian.AppendUint16(b, in.code)
		b = append(b, in.jt, in.jf)
		b = binary.NativeEndian.AppendUint32(b, in.k)
	}
	return b
}

// TestEvalAndConstAllow runs a small filter of the shape libseccomp
// emits (architecture check, a number check, an argument check) through
// Eval and ConstAllow: calls 0 and 2 are allowed by number alone (the
// kernel's bitmap), call 1 reads its second argument (ALLOW or NOTIFY),
// anything else on the architecture is ERRNO(1), another architecture is
// killed.
func TestEvalAndConstAllow(t *testing.T) {
	const arch = unix.AUDIT_ARCH_X86_64
	const notify = unix.SECCOMP_RET_USER_NOTIF
	errno := uint32(unix.SECCOMP_RET_ERRNO | 1)
	prog := asm(
		insn{bpfLD | bpfW | bpfABS, 0, 0, 4},                     // 0: A = arch
		insn{bpfJMP | bpfJEQ | bpfK, 1, 0, arch},                 // 1
		insn{bpfRET | bpfK, 0, 0, unix.SECCOMP_RET_KILL_PROCESS}, // 2
		insn{bpfLD | bpfW | bpfABS, 0, 0, 0},                     // 3: A = nr
		insn{bpfJMP | bpfJEQ | bpfK, 6, 0, 0},                    // 4: nr 0 -> 11
		insn{bpfJMP | bpfJEQ | bpfK, 5, 0, 2},                    // 5: nr 2 -> 11
		insn{bpfJMP | bpfJEQ | bpfK, 0, 3, 1},                    // 6: nr 1 -> 7, else 10
		insn{bpfLD | bpfW | bpfABS, 0, 0, 24},                    // 7: A = low word of args[1]
		insn{bpfJMP | bpfJSET | bpfK, 0, 2, 3},                   // 8: & 3 -> 9, else 11
		insn{bpfRET | bpfK, 0, 0, notify},                        // 9
		insn{bpfRET | bpfK, 0, 0, errno},                         // 10
		insn{bpfRET | bpfK, 0, 0, unix.SECCOMP_RET_ALLOW},        // 11
	)
	rows := []struct {
		name     string
		call     Call
		action   uint32
		steps    int
		constant bool
		notified bool
		allowed  bool
	}{
		{"by-number", Call{Nr: 0, Arch: arch}, unix.SECCOMP_RET_ALLOW, 5, true, false, true},
		{"by-number-second", Call{Nr: 2, Arch: arch}, unix.SECCOMP_RET_ALLOW, 6, true, false, true},
		{"argument-clear", Call{Nr: 1, Arch: arch, Args: [6]uint64{0, 4}}, unix.SECCOMP_RET_ALLOW, 9, false, false, true},
		{"argument-set", Call{Nr: 1, Arch: arch, Args: [6]uint64{0, 2}}, notify, 9, false, true, false},
		{"other-number", Call{Nr: 9, Arch: arch}, errno, 7, false, false, false},
		{"other-arch", Call{Nr: 0, Arch: unix.AUDIT_ARCH_I386}, unix.SECCOMP_RET_KILL_PROCESS, 3, false, false, false},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Eval(prog, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if v.Action != tc.action || v.Steps != tc.steps || v.Notified() != tc.notified || v.Allowed() != tc.allowed {
				t.Errorf("Eval = %+v (notified %v, allowed %v), want action %#x in %d steps", v, v.Notified(), v.Allowed(), tc.action, tc.steps)
			}
			c, err := ConstAllow(prog, tc.call.Arch, tc.call.Nr)
			if err != nil || c != tc.constant {
				t.Errorf("ConstAllow = %v, %v; want %v", c, err, tc.constant)
			}
		})
	}
}

// TestEvalRefusesBadPrograms: a program the kernel would refuse is an
// error, never a verdict.
func TestEvalRefusesBadPrograms(t *testing.T) {
	rows := []struct {
		name string
		prog []byte
	}{
		{"empty", nil},
		{"torn", []byte{1, 2, 3}},
		{"load-past-data", asm(insn{bpfLD | bpfW | bpfABS, 0, 0, 64}, insn{bpfRET | bpfK, 0, 0, 0})},
		{"unaligned-load", asm(insn{bpfLD | bpfW | bpfABS, 0, 0, 2}, insn{bpfRET | bpfK, 0, 0, 0})},
		{"scratch-slot", asm(insn{bpfST, 0, 0, 16}, insn{bpfRET | bpfK, 0, 0, 0})},
		{"divide-by-zero", asm(insn{bpfALU | bpfDIV | bpfK, 0, 0, 0}, insn{bpfRET | bpfK, 0, 0, 0})},
		{"no-return", asm(insn{bpfLD | bpfW | bpfABS, 0, 0, 0})},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := Eval(tc.prog, Call{}); !errors.Is(err, ErrBadProgram) {
				t.Errorf("Eval = %+v, %v; want ErrBadProgram", v, err)
			}
		})
	}
}
