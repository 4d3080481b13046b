package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrBadProgram is returned by Eval for a program the kernel would not
// load or run (an instruction seccomp does not accept, a jump or a load
// out of range, a path with no return).
var ErrBadProgram = errors.New("seccomp: not a valid seccomp BPF program")

// Call is one system call as a seccomp filter sees it (struct
// seccomp_data): the number, the audit architecture and the arguments.
type Call struct {
	Nr   int32
	Arch uint32
	Args [6]uint64
}

// Verdict is what a filter returned for a call and the instructions it ran
// to get there (the cost of the call in the filter).
type Verdict struct {
	Action uint32 // SECCOMP_RET_* with its data, as returned
	Steps  int
}

// Allowed reports whether v lets the call run (SECCOMP_RET_ALLOW).
func (v Verdict) Allowed() bool { return v.Action == unix.SECCOMP_RET_ALLOW }

// Notified reports whether v sends the call to the broker
// (SECCOMP_RET_USER_NOTIF).
func (v Verdict) Notified() bool {
	return v.Action&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_USER_NOTIF
}

type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

// decode splits prog (as Compile returns it, in the host's byte order)
// into instructions.
func decode(prog []byte) ([]insn, error) {
	if !validBPF(prog) {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadProgram, len(prog))
	}
	out := make([]insn, len(prog)/8)
	for i := range out {
		b := prog[i*8:]
		out[i] = insn{binary.NativeEndian.Uint16(b), b[2], b[3], binary.NativeEndian.Uint32(b[4:])}
	}
	return out, nil
}

// data is struct seccomp_data of c: nr, arch, instruction_pointer (0),
// args.
func (c Call) data() [64]byte {
	var d [64]byte
	binary.NativeEndian.PutUint32(d[0:], uint32(c.Nr))
	binary.NativeEndian.PutUint32(d[4:], c.Arch)
	for i, a := range c.Args {
		binary.NativeEndian.PutUint64(d[16+8*i:], a)
	}
	return d
}

// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
const (
	bpfLD, bpfLDX, bpfST, bpfSTX, bpfALU, bpfJMP, bpfRET, bpfMISC = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
	bpfW, bpfABS, bpfIMM, bpfMEM, bpfLEN                          = 0x00, 0x20, 0x00, 0x60, 0x80
	bpfK, bpfX, bpfA                                              = 0x00, 0x08, 0x10
	bpfJA, bpfJEQ, bpfJGT, bpfJGE, bpfJSET                        = 0x00, 0x10, 0x20, 0x30, 0x40
	bpfADD, bpfSUB, bpfMUL, bpfDIV, bpfOR, bpfAND                 = 0x00, 0x10, 0x20, 0x30, 0x40, 0x50
	bpfLSH, bpfRSH, bpfNEG, bpfMOD, bpfXOR                        = 0x60, 0x70, 0x80, 0x90, 0xa0
	bpfTAX, bpfTXA                                                = 0x00, 0x80
	seccompDataLen                                                = 64
)

// Eval runs the compiled program prog on call c as the kernel's seccomp
// would, and returns its verdict: what a filter does to a call (and how
// many instructions it costs) without loading it.
func Eval(prog []byte, c Call) (Verdict, error) {
	p, err := decode(prog)
	if err != nil {
		return Verdict{}, err
	}
	d := c.data()
	var a, x uint32
	var mem [16]uint32
	for pc, steps := 0, 1; pc < len(p); pc, steps = pc+1, steps+1 {
		in := p[pc]
		src := in.k
		if in.code&bpfX != 0 {
			src = x
		}
		switch in.code & 0x07 {
		case bpfLD, bpfLDX:
			var v uint32
			switch in.code & 0xe0 {
			case bpfABS:
				if in.code&0x18 != bpfW || in.k%4 != 0 || in.k >= seccompDataLen {
					return Verdict{}, fmt.Errorf("%w: load at %d (instruction %d)", ErrBadProgram, in.k, pc)
				}
				v = binary.NativeEndian.Uint32(d[in.k:])
			case bpfIMM:
				v = in.k
			case bpfMEM:
				if in.k >= 16 {
					return Verdict{}, fmt.Errorf("%w: scratch slot %d (instruction %d)", ErrBadProgram, in.k, pc)
				}
				v = mem[in.k]
			case bpfLEN:
				v = seccompDataLen
			default:
				return Verdict{}, fmt.Errorf("%w: load mode %#x (instruction %d)", ErrBadProgram, in.code, pc)
			}
			if in.code&0x07 == bpfLD {
				a = v
			} else {
				x = v
			}
		case bpfST, bpfSTX:
			if in.k >= 16 {
				return Verdict{}, fmt.Errorf("%w: scratch slot %d (instruction %d)", ErrBadProgram, in.k, pc)
			}
			if in.code&0x07 == bpfST {
				mem[in.k] = a
			} else {
				mem[in.k] = x
			}
		case bpfALU:
			if a, err = alu(in.code&0xf0, a, src); err != nil {
				return Verdict{}, fmt.Errorf("%w (instruction %d)", err, pc)
			}
		case bpfJMP:
			op := in.code & 0xf0
			if op == bpfJA {
				pc += int(in.k)
				continue
			}
			var taken bool
			switch op {
			case bpfJEQ:
				taken = a == src
			case bpfJGT:
				taken = a > src
			case bpfJGE:
				taken = a >= src
			case bpfJSET:
				taken = a&src != 0
			default:
				return Verdict{}, fmt.Errorf("%w: jump %#x (instruction %d)", ErrBadProgram, in.code, pc)
			}
			if taken {
				pc += int(in.jt)
			} else {
				pc += int(in.jf)
			}
		case bpfRET:
			switch in.code & 0x18 {
			case bpfK:
				return Verdict{Action: in.k, Steps: steps}, nil
			case bpfA:
				return Verdict{Action: a, Steps: steps}, nil
			}
			return Verdict{}, fmt.Errorf("%w: return %#x (instruction %d)", ErrBadProgram, in.code, pc)
		case bpfMISC:
			switch in.code & 0xf8 {
			case bpfTAX:
				x = a
			case bpfTXA:
				a = x
			default:
				return Verdict{}, fmt.Errorf("%w: %#x (instruction %d)", ErrBadProgram, in.code, pc)
			}
		}
	}
	return Verdict{}, fmt.Errorf("%w: runs off its end", ErrBadProgram)
}

func alu(op uint16, a, src uint32) (uint32, error) {
	switch op {
	case bpfADD:
		return a + src, nil
	case bpfSUB:
		return a - src, nil
	case bpfMUL:
		return a * src, nil
	case bpfDIV, bpfMOD:
		if src == 0 {
			return 0, fmt.Errorf("%w: division by zero", ErrBadProgram)
		}
		if op == bpfDIV {
			return a / src, nil
		}
		return a % src, nil
	case bpfOR:
		return a | src, nil
	case bpfAND:
		return a & src, nil
	case bpfXOR:
		return a ^ src, nil
	case bpfLSH:
		return a << (src & 31), nil
	case bpfRSH:
		return a >> (src & 31), nil
	case bpfNEG:
		return -a, nil
	}
	return 0, fmt.Errorf("%w: alu %#x", ErrBadProgram, op)
}

// ConstAllow reports whether the kernel lets call nr of architecture arch
// through without running prog at all: when it loads a filter, seccomp
// emulates it with only the number and the architecture known
// (seccomp_is_const_allow, Linux 5.11) and marks in a bitmap each call
// the filter allows whatever its arguments are; such a call then costs a
// bit test, not a run of the filter. This is that emulation, instruction
// for instruction: a filter that reads an argument, or uses any
// instruction the kernel's emulator does not know, on a call's path makes
// the call run the filter every time.
func ConstAllow(prog []byte, arch uint32, nr int32) (bool, error) {
	p, err := decode(prog)
	if err != nil {
		return false, err
	}
	var a uint32
	for pc := 0; pc < len(p); pc++ {
		in := p[pc]
		switch in.code {
		case bpfLD | bpfW | bpfABS:
			switch in.k {
			case 0:
				a = uint32(nr)
			case 4:
				a = arch
			default:
				return false, nil
			}
		case bpfRET | bpfK:
			return in.k == unix.SECCOMP_RET_ALLOW, nil
		case bpfJMP | bpfJA:
			pc += int(in.k)
		case bpfJMP | bpfJEQ | bpfK, bpfJMP | bpfJGE | bpfK, bpfJMP | bpfJGT | bpfK, bpfJMP | bpfJSET | bpfK:
			var taken bool
			switch in.code & 0xf0 {
			case bpfJEQ:
				taken = a == in.k
			case bpfJGE:
				taken = a >= in.k
			case bpfJGT:
				taken = a > in.k
			case bpfJSET:
				taken = a&in.k != 0
			}
			if taken {
				pc += int(in.jt)
			} else {
				pc += int(in.jf)
			}
		case bpfALU | bpfAND | bpfK:
			a &= in.k
		default:
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: runs off its end", ErrBadProgram)
}
