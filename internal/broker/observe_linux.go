package broker

import (
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Observer is a Policy that also hears of each refusal as it is made, so
// that a warm session can give each exec the refusals of its own
// processes. It also hears of each brokered call the kernel refused
// because the file system is read-only (Rule ReadOnly): the broker
// performed it, so that too is the enforcement point's own word.
type Observer interface {
	Denied(Denial)
}

// ReadOnly is the Rule of a brokered call that failed with EROFS.
const ReadOnly = "read-only"

// callerPid returns the pid of the call this worker thread is performing.
func (b *Broker) callerPid() int {
	tid := unix.Gettid()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, t := range b.tids {
		if t == tid && i < len(b.callers) {
			return int(b.callers[i].Load())
		}
	}
	return 0
}

// observe tells an Observer policy of d, with the caller's trackers.
func (b *Broker) observe(d Denial, pid int) {
	o, ok := b.policy.(Observer)
	if !ok {
		return
	}
	if d.Trackers == nil && pid > 0 {
		d.Trackers = trackers(pid)
	}
	o.Denied(d)
}

// trackers returns the pipes and sockets (their inode numbers) that pid's
// oldest ancestor below the sandbox's PID 1 holds open. In a warm session
// that ancestor is the shim that runs the exec, one at a time, and keeps
// its socket to the supervisor until the command's whole tree has ended
// (orphans reparent to it), so the supervisor, which made that socket
// pair, knows the exec by the inode of the shim's end.
func trackers(pid int) []uint64 {
	cur := pid
	for range 256 {
		ppid, _ := procIDs(cur)
		if ppid <= 0 {
			return nil
		}
		_, pns := procIDs(ppid)
		if pns == 1 {
			return pipesOf(cur)
		}
		if _, ns := procIDs(cur); ns == 1 {
			return nil // the sandbox's PID 1 itself
		}
		cur = ppid
	}
	return nil
}

// procIDs returns a process's parent (as this process sees pids) and its
// pid in its innermost namespace.
func procIDs(pid int) (ppid, inner int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1, -1
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := strings.Fields(string(v))
		if len(f) == 0 {
			continue
		}
		switch string(k) {
		case "PPid":
			ppid, _ = strconv.Atoi(f[0])
		case "NSpid":
			inner, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	return ppid, inner
}

// pipesOf lists the pipes and sockets pid holds open.
func pipesOf(pid int) []uint64 {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := []uint64{}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		s, ok := strings.CutPrefix(l, "pipe:[")
		if !ok {
			s, ok = strings.CutPrefix(l, "socket:[")
		}
		if ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
