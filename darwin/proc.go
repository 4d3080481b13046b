package darwin

import "sort"

// procInfo is one row of the process table.
type procInfo struct {
	PID, PPID, PGID int
	// Start is the start time in microseconds, which tells a process from
	// a later one that reuses its pid.
	Start int64
	// Zombie is true for a process that has exited but is not reaped yet.
	Zombie bool
}

// procTracker remembers the processes of one run. macOS has no cgroup and
// no subreaper: a process that leaves the run's session and whose parent
// exits is re-parented to launchd, and only a record taken while its
// parent lived ties it to the run. The runner scans the process table
// periodically and feeds each scan to observe.
type procTracker struct {
	root, pgid, self int
	known            map[int]int64 // pid -> start time
}

func newProcTracker(root, pgid, self int) *procTracker {
	return &procTracker{root: root, pgid: pgid, self: self, known: map[int]int64{}}
}

// observe records the run's processes in this scan.
func (t *procTracker) observe(procs []procInfo) {
	for _, p := range t.members(procs) {
		t.known[p.PID] = p.Start
	}
}

// members returns the run's processes in procs: the root, the members of
// its process group, the processes recorded earlier (same pid and start
// time), and every descendant of those. Pids 0 and 1 and cordon itself are
// never members. The result is sorted by pid.
func (t *procTracker) members(procs []procInfo) []procInfo {
	in := map[int]bool{}
	eligible := func(p procInfo) bool { return p.PID > 1 && p.PID != t.self }
	for _, p := range procs {
		if !eligible(p) {
			continue
		}
		start, seen := t.known[p.PID]
		if p.PID == t.root || (t.pgid > 1 && p.PGID == t.pgid) || (seen && start == p.Start) {
			in[p.PID] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if eligible(p) && !in[p.PID] && in[p.PPID] {
				in[p.PID] = true
				changed = true
			}
		}
	}
	var out []procInfo
	for _, p := range procs {
		if in[p.PID] {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
