//go:build darwin

package darwin

import (
	"time"

	"golang.org/x/sys/unix"
)

// szomb is the p_stat of a zombie process (<sys/proc.h>).
const szomb = 5

// listProcs reads the process table.
func listProcs() ([]procInfo, error) {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]procInfo, 0, len(kps))
	for i := range kps {
		k := &kps[i]
		out = append(out, procInfo{
			PID:    int(k.Proc.P_pid),
			PPID:   int(k.Eproc.Ppid),
			PGID:   int(k.Eproc.Pgid),
			Start:  int64(k.Proc.P_starttime.Sec)*1e6 + int64(k.Proc.P_starttime.Usec),
			Zombie: k.Proc.P_stat == szomb,
		})
	}
	return out, nil
}

// waitExit returns once process pid has exited, without reaping it, so that
// its children still name it as their parent when the run is killed. It
// waits on kqueue's NOTE_EXIT and, every second and when kqueue is not
// available, checks the process table, so that an exit before the watch
// was set up is not missed.
func waitExit(pid int) {
	kq := -1
	if fd, err := unix.Kqueue(); err == nil {
		var ev unix.Kevent_t
		unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
		ev.Fflags = unix.NOTE_EXIT
		if _, err := unix.Kevent(fd, []unix.Kevent_t{ev}, nil, nil); err == nil {
			kq = fd
			defer unix.Close(kq)
		} else {
			unix.Close(fd)
		}
	}
	events := make([]unix.Kevent_t, 1)
	for {
		if exited(pid) {
			return
		}
		if kq < 0 {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		timeout := unix.NsecToTimespec(int64(time.Second))
		if n, err := unix.Kevent(kq, nil, events, &timeout); err == nil && n > 0 {
			return
		}
	}
}

// exited reports whether pid is gone or a zombie. When the table cannot be
// read it says no: killing a live command early is worse than waiting for
// kqueue, the timeout or the caller.
func exited(pid int) bool {
	procs, err := listProcs()
	if err != nil {
		return false
	}
	for _, p := range procs {
		if p.PID == pid {
			return p.Zombie
		}
	}
	return true
}
