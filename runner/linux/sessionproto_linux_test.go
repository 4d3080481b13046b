package linux

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// statusRecord is a status record as a shim lays it out (struct
// cordon_status in sessioninit_linux.c), for the tests to write.
type statusRecord struct {
	magic, version               uint32
	phase, errno, wstatus, flags int32
	utimeUS, stimeUS, maxRSSKB   int64
	truncate, extra              int // bytes cut off the end, or added to it
}

func okRecord() statusRecord {
	return statusRecord{magic: protoStatusMagic, version: protoVersion}
}

func (r statusRecord) bytes() []byte {
	b := make([]byte, protoStatusSize, protoStatusSize+r.extra)
	le := binary.NativeEndian
	le.PutUint32(b[0:], r.magic)
	le.PutUint32(b[4:], r.version)
	le.PutUint32(b[8:], uint32(r.phase))
	le.PutUint32(b[12:], uint32(r.errno))
	le.PutUint32(b[16:], uint32(r.wstatus))
	le.PutUint32(b[20:], uint32(r.flags))
	le.PutUint64(b[24:], uint64(r.utimeUS))
	le.PutUint64(b[32:], uint64(r.stimeUS))
	le.PutUint64(b[40:], uint64(r.maxRSSKB))
	b = b[:protoStatusSize-r.truncate]
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
		want execStatus
	}{
		{"exit 0", okRecord(), execStatus{}},
		{"exit 3, again, usage", with(func(r *statusRecord) {
			r.wstatus, r.flags, r.utimeUS, r.stimeUS, r.maxRSSKB = exited(3), statusAgain, 1500, 20, 4096
		}), execStatus{wstatus: exited(3), again: true, utimeUS: 1500, stimeUS: 20, maxRSSKB: 4096}},
		{"exit 255", with(func(r *statusRecord) { r.wstatus = exited(255) }), execStatus{wstatus: exited(255)}},
		{"killed by SIGKILL", with(func(r *statusRecord) { r.wstatus, r.flags = int32(unix.SIGKILL), statusKilled }),
			execStatus{wstatus: int32(unix.SIGKILL)}},
		{"SIGSEGV with a core", with(func(r *statusRecord) { r.wstatus = int32(unix.SIGSEGV) | 0x80 }),
			execStatus{wstatus: int32(unix.SIGSEGV) | 0x80}},
		{"last real-time signal", with(func(r *statusRecord) { r.wstatus = 64 }), execStatus{wstatus: 64}},
		{"chdir failed", with(func(r *statusRecord) { r.phase, r.errno = phaseChdir, int32(unix.ENOENT) }),
			execStatus{phase: phaseChdir, errno: int32(unix.ENOENT)}},
		{"exec failed, errno 4095", with(func(r *statusRecord) { r.phase, r.errno = phaseExec, 4095 }),
			execStatus{phase: phaseExec, errno: 4095}},
		{"attrs", with(func(r *statusRecord) { r.phase, r.errno, r.wstatus = phaseAttrs, int32(unix.EPERM), exited(1) }),
			execStatus{phase: phaseAttrs, errno: int32(unix.EPERM), wstatus: exited(1)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeStatus(tc.rec.bytes())
			if err != nil || got != tc.want {
				t.Fatalf("decodeStatus = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	bad := []struct {
		name string
		rec  statusRecord
	}{
		{"empty", with(func(r *statusRecord) { r.truncate = protoStatusSize })},
		{"one byte short", with(func(r *statusRecord) { r.truncate = 1 })},
		{"one byte long", with(func(r *statusRecord) { r.extra = 1 })},
		{"bad magic", with(func(r *statusRecord) { r.magic = protoReqMagic })},
		{"old version", with(func(r *statusRecord) { r.version = protoVersion - 1 })},
		{"negative phase", with(func(r *statusRecord) { r.phase = -1 })},
		{"unknown phase", with(func(r *statusRecord) { r.phase = phaseAttrs + 1 })},
		{"negative errno", with(func(r *statusRecord) { r.phase, r.errno = phaseExec, -1 })},
		{"errno too large", with(func(r *statusRecord) { r.phase, r.errno = phaseExec, 4096 })},
		{"unknown flag", with(func(r *statusRecord) { r.flags = 4 })},
		{"negative flags", with(func(r *statusRecord) { r.flags = -1 })},
		{"negative user time", with(func(r *statusRecord) { r.utimeUS = -1 })},
		{"negative system time", with(func(r *statusRecord) { r.stimeUS = -1 << 62 })},
		{"negative RSS", with(func(r *statusRecord) { r.maxRSSKB = -4096 })},
		{"stopped, not ended", with(func(r *statusRecord) { r.wstatus = int32(unix.SIGSTOP)<<8 | 0x7f })},
		{"continued", with(func(r *statusRecord) { r.wstatus = 0xffff })},
		{"signal 65", with(func(r *statusRecord) { r.wstatus = 65 })},
		{"exit code above 255", with(func(r *statusRecord) { r.wstatus = 256 << 8 })},
		{"negative wait status", with(func(r *statusRecord) { r.wstatus = -1 << 8 })},
		{"signal with an exit code", with(func(r *statusRecord) { r.wstatus = 1<<8 | int32(unix.SIGKILL) })},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := decodeStatus(tc.rec.bytes()); err == nil {
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
		{magic: protoStatusMagic, version: protoVersion, wstatus: 3 << 8, flags: statusAgain, utimeUS: 1500, stimeUS: 20, maxRSSKB: 4096},
		{magic: protoStatusMagic, version: protoVersion, wstatus: 9, flags: statusKilled},
		{magic: protoStatusMagic, version: protoVersion, phase: phaseExec, errno: 2},
		{magic: protoStatusMagic, version: protoVersion, phase: phaseAttrs, errno: 1, wstatus: 1 << 8},
		{magic: protoStatusMagic, version: protoVersion, wstatus: 0x137f},
		{magic: protoStatusMagic, version: protoVersion, truncate: 1},
	} {
		f.Add(r.bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeStatus(b)
		if err != nil {
			if st != (execStatus{}) {
				t.Fatalf("a refused record decoded to %+v", st)
			}
			return
		}
		if st.phase < phaseRan || st.phase > phaseAttrs || st.errno < 0 || st.errno > 4095 ||
			st.utimeUS < 0 || st.stimeUS < 0 || st.maxRSSKB < 0 {
			t.Fatalf("accepted a status out of range: %+v", st)
		}
		if st.phase == phaseRan {
			ws := unix.WaitStatus(st.wstatus)
			if ws.Exited() == ws.Signaled() || (ws.Signaled() && unix.SignalName(ws.Signal()) == "" && ws.Signal() < 32) {
				t.Fatalf("accepted wait status %#x of a process that did not end", st.wstatus)
			}
		}
		flags := int32(binary.NativeEndian.Uint32(b[20:]))
		again := okRecord()
		again.phase, again.errno, again.wstatus, again.flags = st.phase, st.errno, st.wstatus, flags
		again.utimeUS, again.stimeUS, again.maxRSSKB = st.utimeUS, st.stimeUS, st.maxRSSKB
		if st2, err := decodeStatus(again.bytes()); err != nil || st2 != st {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", st, st2, err)
		}
	})
}
