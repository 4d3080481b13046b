package pid1

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// statusRecord is a status record as a shim lays it out (struct
// cordon_status in sessioninit_linux.c), for the tests to write.
type statusRecord struct {
	magic, version               uint32
	Phase, Errno, Wstatus, flags int32
	UtimeUS, StimeUS, MaxRSSKB   int64
	truncate, extra              int // bytes cut off the end, or added to it
}

func okRecord() statusRecord {
	return statusRecord{magic: protoStatusMagic, version: protoVersion}
}

func (r statusRecord) bytes() []byte {
	b := make([]byte, ProtoStatusSize, ProtoStatusSize+r.extra)
	le := binary.NativeEndian
	le.PutUint32(b[0:], r.magic)
	le.PutUint32(b[4:], r.version)
	le.PutUint32(b[8:], uint32(r.Phase))
	le.PutUint32(b[12:], uint32(r.Errno))
	le.PutUint32(b[16:], uint32(r.Wstatus))
	le.PutUint32(b[20:], uint32(r.flags))
	le.PutUint64(b[24:], uint64(r.UtimeUS))
	le.PutUint64(b[32:], uint64(r.StimeUS))
	le.PutUint64(b[40:], uint64(r.MaxRSSKB))
	b = b[:ProtoStatusSize-r.truncate]
	return append(b, make([]byte, r.extra)...)
}

// TestDecodeStatus: a status record comes from a shim inside the sandbox,
// so every field that does not hold what a shim writes refuses the record
// (the exec then ends as session_gone, not with an exit code the sandbox
// chose).
func TestDecodeStatus(t *testing.T) {
	with := func(f func(*statusRecord)) statusRecord {
		r := okRecord()
		f(&r)
		return r
	}
	exited := func(code int32) int32 { return code << 8 }
	ok := []struct {
		name string
		rec  statusRecord
		want ExecStatus
	}{
		{"exit 0", okRecord(), ExecStatus{}},
		{"exit 3, again, usage", with(func(r *statusRecord) {
			r.Wstatus, r.flags, r.UtimeUS, r.StimeUS, r.MaxRSSKB = exited(3), statusAgain, 1500, 20, 4096
		}), ExecStatus{Wstatus: exited(3), Again: true, UtimeUS: 1500, StimeUS: 20, MaxRSSKB: 4096}},
		{"exit 255", with(func(r *statusRecord) { r.Wstatus = exited(255) }), ExecStatus{Wstatus: exited(255)}},
		{"killed by SIGKILL", with(func(r *statusRecord) { r.Wstatus, r.flags = int32(unix.SIGKILL), statusKilled }),
			ExecStatus{Wstatus: int32(unix.SIGKILL)}},
		{"SIGSEGV with a core", with(func(r *statusRecord) { r.Wstatus = int32(unix.SIGSEGV) | 0x80 }),
			ExecStatus{Wstatus: int32(unix.SIGSEGV) | 0x80}},
		{"last real-time signal", with(func(r *statusRecord) { r.Wstatus = 64 }), ExecStatus{Wstatus: 64}},
		{"chdir failed", with(func(r *statusRecord) { r.Phase, r.Errno = PhaseChdir, int32(unix.ENOENT) }),
			ExecStatus{Phase: PhaseChdir, Errno: int32(unix.ENOENT)}},
		{"exec failed, errno 4095", with(func(r *statusRecord) { r.Phase, r.Errno = PhaseExec, 4095 }),
			ExecStatus{Phase: PhaseExec, Errno: 4095}},
		{"attrs", with(func(r *statusRecord) { r.Phase, r.Errno, r.Wstatus = PhaseAttrs, int32(unix.EPERM), exited(1) }),
			ExecStatus{Phase: PhaseAttrs, Errno: int32(unix.EPERM), Wstatus: exited(1)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeStatus(tc.rec.bytes())
			if err != nil || got != tc.want {
				t.Fatalf("decodeStatus = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	bad := []struct {
		name string
		rec  statusRecord
	}{
		{"empty", with(func(r *statusRecord) { r.truncate = ProtoStatusSize })},
		{"one byte short", with(func(r *statusRecord) { r.truncate = 1 })},
		{"one byte long", with(func(r *statusRecord) { r.extra = 1 })},
		{"bad magic", with(func(r *statusRecord) { r.magic = protoReqMagic })},
		{"old version", with(func(r *statusRecord) { r.version = protoVersion - 1 })},
		{"negative phase", with(func(r *statusRecord) { r.Phase = -1 })},
		{"unknown phase", with(func(r *statusRecord) { r.Phase = PhaseAttrs + 1 })},
		{"negative errno", with(func(r *statusRecord) { r.Phase, r.Errno = PhaseExec, -1 })},
		{"errno too large", with(func(r *statusRecord) { r.Phase, r.Errno = PhaseExec, 4096 })},
		{"unknown flag", with(func(r *statusRecord) { r.flags = 4 })},
		{"negative flags", with(func(r *statusRecord) { r.flags = -1 })},
		{"negative user time", with(func(r *statusRecord) { r.UtimeUS = -1 })},
		{"negative system time", with(func(r *statusRecord) { r.StimeUS = -1 << 62 })},
		{"negative RSS", with(func(r *statusRecord) { r.MaxRSSKB = -4096 })},
		{"stopped, not ended", with(func(r *statusRecord) { r.Wstatus = int32(unix.SIGSTOP)<<8 | 0x7f })},
		{"continued", with(func(r *statusRecord) { r.Wstatus = 0xffff })},
		{"signal 65", with(func(r *statusRecord) { r.Wstatus = 65 })},
		{"exit code above 255", with(func(r *statusRecord) { r.Wstatus = 256 << 8 })},
		{"negative wait status", with(func(r *statusRecord) { r.Wstatus = -1 << 8 })},
		{"signal with an exit code", with(func(r *statusRecord) { r.Wstatus = 1<<8 | int32(unix.SIGKILL) })},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := DecodeStatus(tc.rec.bytes()); err == nil {
				t.Fatalf("decodeStatus = %+v; want an error", got)
			}
		})
	}
}

// FuzzDecodeStatus: whatever bytes a shim sends, decodeStatus either
// refuses them or returns a status within what a shim can report, and a
// record it accepts decodes the same when written again.
func FuzzDecodeStatus(f *testing.F) {
	for _, r := range []statusRecord{
		okRecord(),
		{magic: protoStatusMagic, version: protoVersion, Wstatus: 3 << 8, flags: statusAgain, UtimeUS: 1500, StimeUS: 20, MaxRSSKB: 4096},
		{magic: protoStatusMagic, version: protoVersion, Wstatus: 9, flags: statusKilled},
		{magic: protoStatusMagic, version: protoVersion, Phase: PhaseExec, Errno: 2},
		{magic: protoStatusMagic, version: protoVersion, Phase: PhaseAttrs, Errno: 1, Wstatus: 1 << 8},
		{magic: protoStatusMagic, version: protoVersion, Wstatus: 0x137f},
		{magic: protoStatusMagic, version: protoVersion, truncate: 1},
	} {
		f.Add(r.bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeStatus(b)
		if err != nil {
			if st != (ExecStatus{}) {
				t.Fatalf("a refused record decoded to %+v", st)
			}
			return
		}
		if st.Phase < PhaseRan || st.Phase > PhaseAttrs || st.Errno < 0 || st.Errno > 4095 ||
			st.UtimeUS < 0 || st.StimeUS < 0 || st.MaxRSSKB < 0 {
			t.Fatalf("accepted a status out of range: %+v", st)
		}
		if st.Phase == PhaseRan {
			ws := unix.WaitStatus(st.Wstatus)
			if ws.Exited() == ws.Signaled() || (ws.Signaled() && unix.SignalName(ws.Signal()) == "" && ws.Signal() < 32) {
				t.Fatalf("accepted wait status %#x of a process that did not end", st.Wstatus)
			}
		}
		flags := int32(binary.NativeEndian.Uint32(b[20:]))
		Again := okRecord()
		Again.Phase, Again.Errno, Again.Wstatus, Again.flags = st.Phase, st.Errno, st.Wstatus, flags
		Again.UtimeUS, Again.StimeUS, Again.MaxRSSKB = st.UtimeUS, st.StimeUS, st.MaxRSSKB
		if st2, err := DecodeStatus(Again.bytes()); err != nil || st2 != st {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", st, st2, err)
		}
	})
}
