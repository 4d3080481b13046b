#!/usr/bin/env python3
"""Split cordon runs into phases from `perf script` output.

Usage: phases.py BINARY TRACE... (each TRACE the output of
`perf script -F comm,pid,tid,cpu,time,event,trace` for one system-wide
`perf record -a` of `BINARY run -- CMD`, with the events
hack/bench.d/profile.sh lists). BINARY is the cordon path as exec'd; only
the tasks forked from that exec count, so other processes on the machine
(other cordon runs included) are left out.

The markers are kernel tracepoints (sched exec/fork/exit, cgroup mkdir,
attach and rmdir, and a few syscalls), so the run is timed with microsecond
resolution and no ptrace overhead. It prints a markdown table with the
median and minimum of each phase over the traces.
"""
import re
import statistics
import sys

LINE = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>\d+\.\d+):\s+(?P<event>[\w:]+):\s?(?P<trace>.*)$")


def parse(path, binary):
    """Return the events of the run of binary (recorded system-wide): the
    tasks forked from its first exec, and the CPU time line of every CPU."""
    events = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                d = m.groupdict()
                d["pid"], d["tid"], d["cpu"], d["time"] = int(d["pid"]), int(d["tid"]), int(d["cpu"]), float(d["time"])
                events.append(d)
    events.sort(key=lambda e: e["time"])
    tasks, out, switches = set(), [], []
    for e in events:
        if e["event"] == "sched:sched_switch":
            switches.append(e)
            continue
        if not tasks:
            if e["event"] == "sched:sched_process_exec" and kv(e["trace"]).get("filename") == binary:
                tasks.add(e["pid"])
            else:
                continue
        if e["event"] == "sched:sched_process_fork" and (e["pid"] in tasks or e["tid"] in tasks):
            tasks.add(int(kv(e["trace"])["child_pid"]))
        if e["pid"] in tasks or e["tid"] in tasks:
            out.append(e)
    return out, switches, tasks


SWITCH = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)")


def on_cpu(switches, tasks, t0, t1):
    """Return (running, runnable) seconds of the tasks between t0 and t1,
    from sched_switch: the time they ran, and the time they were preempted
    (switched out runnable, state R) until they ran again, which is what
    other load on the machine costs them."""
    ran, waited, running, preempted = 0.0, 0.0, {}, {}
    clip = lambda a, b: max(0.0, min(b, t1) - max(a, t0))
    for e in switches:
        if e["time"] > t1:
            break
        m = SWITCH.search(e["trace"])
        if not m:
            continue
        prev, state, nxt = int(m.group(1)), m.group(2), int(m.group(3))
        cpu = e["cpu"]
        if cpu in running:
            tid, since = running.pop(cpu)
            if tid == prev and tid in tasks:
                ran += clip(since, e["time"])
        if prev in tasks and state.startswith("R"):
            preempted[prev] = e["time"]
        if nxt in preempted:
            waited += clip(preempted.pop(nxt), e["time"])
        running[cpu] = (nxt, e["time"])
    for cpu, (tid, since) in running.items():
        if tid in tasks:
            ran += clip(since, t1)
    for tid, since in preempted.items():
        waited += clip(since, t1)
    return ran, waited


def kv(trace):
    return dict(re.findall(r"(\w+)=(\S+)", trace))


def first(events, pred, after=None):
    for e in events:
        if (after is None or e["time"] >= after) and pred(e):
            return e
    return None


def last(events, pred, before=None):
    out = None
    for e in events:
        if before is not None and e["time"] > before:
            break
        if pred(e):
            out = e
    return out


def markers(events):
    """Return a dict of marker name -> time (seconds) for one run."""
    t = {}
    ev = lambda name: (lambda e: e["event"] == name)
    start = first(events, lambda e: e["event"] == "sched:sched_process_exec")
    if start is None:
        return t
    main = start["pid"]
    t["A"] = start["time"]
    mine = lambda e: e["pid"] == main
    lock = first(events, lambda e: mine(e) and e["event"] == "syscalls:sys_enter_flock")
    if lock:
        t["A2"] = lock["time"]
    # The init is the child of cordon that execs something other than cordon's own path.
    init_exec = first(events, lambda e: e["event"] == "sched:sched_process_exec" and e["pid"] != main
                      and kv(e["trace"]).get("filename", "").startswith(("/proc/self/fd/", "/proc/self/exe", "/memfd:", "/proc/")))
    if init_exec is None:
        return t
    init = init_exec["pid"]
    t["E"] = init_exec["time"]
    fork = last(events, lambda e: e["event"] == "sched:sched_process_fork" and kv(e["trace"]).get("child_pid") == str(init), before=t["E"])
    if fork:
        t["D"] = fork["time"]
    seal = first(events, lambda e: mine(e) and e["event"] in ("syscalls:sys_enter_fsopen", "syscalls:sys_enter_memfd_create", "syscalls:sys_enter_open_tree"))
    if seal and seal["time"] < t["E"]:
        t["B"] = seal["time"]
        end = t.get("D", t["E"])
        memfd = first(events, lambda e: mine(e) and e["event"] == "syscalls:sys_enter_memfd_create", after=seal["time"])
        if memfd and memfd["time"] < end:
            # overlayfs refused (rootless): a sealed memfd copy of the binary.
            t["seal_kind"] = "memfd copy"
            done = first(events, lambda e: mine(e) and e["event"] == "syscalls:sys_exit_sendfile64", after=memfd["time"])
        else:
            t["seal_kind"] = "overlayfs"
            done = first(events, lambda e: mine(e) and e["event"] == "syscalls:sys_exit_fsmount", after=seal["time"])
        t["C"] = done["time"] if done and done["time"] < end else end
    stage1 = first(events, lambda e: e["event"] == "sched:sched_process_fork" and e["pid"] == init, after=t["E"])
    if stage1:
        t["H"] = stage1["time"]
        s1 = int(kv(stage1["trace"])["child_pid"])
        stage2 = first(events, lambda e: e["event"] == "sched:sched_process_fork" and e["pid"] == s1, after=t["H"])
        if stage2:
            t["I"] = stage2["time"]
            p2 = int(kv(stage2["trace"])["child_pid"])
            mnt = first(events, lambda e: e["pid"] == p2 and e["event"] in ("syscalls:sys_enter_mount", "syscalls:sys_enter_open_tree", "syscalls:sys_enter_fsopen"), after=t["I"])
            if mnt:
                t["J"] = mnt["time"]
            piv = first(events, lambda e: e["pid"] == p2 and e["event"] == "syscalls:sys_enter_pivot_root", after=t["I"])
            if piv:
                t["K"] = piv["time"]
            ex = first(events, lambda e: e["pid"] == p2 and e["event"] == "sched:sched_process_exec", after=t["I"])
            if ex:
                t["M"] = ex["time"]
            loads = [e for e in events if e["pid"] == p2 and e["time"] >= t["I"] and e["event"] == "syscalls:sys_enter_seccomp"
                     and "op: 0x00000001" in e["trace"] and not e["trace"].rstrip().endswith("uargs: 0x00000000")]
            # libcontainer loads the filter before the exec; cordon's PID 1
            # may load a precompiled one after it.
            filt = next((e for e in loads if e["time"] < t.get("M", 1e18)), None)
            late = next((e for e in loads if e["time"] > t.get("M", 1e18)), None)
            if late:
                t["L2"] = late["time"]
            si = first(events, lambda e: e["pid"] == p2 and e["event"] == "probe_libseccomp:seccomp_init", after=t.get("K", t["I"]))
            sx = first(events, lambda e: e["pid"] == p2 and e["event"] == "probe_libseccomp:seccomp_export_bpf", after=t.get("K", t["I"]))
            sr = first(events, lambda e: e["pid"] == p2 and e["event"] == "probe_libseccomp:seccomp_export_bpf__return", after=t.get("K", t["I"]))
            if si and sx and sr:
                t["K2"], t["K3"], t["K4"] = si["time"], sx["time"], sr["time"]
            if filt:
                t["L"] = filt["time"]
            else:
                t["KM"] = True
            end2 = first(events, lambda e: e["pid"] == p2 and e["event"] == "sched:sched_process_exit" and "group_dead=true" in e["trace"], after=t["I"])
            if end2:
                t["Q"] = end2["time"]
    cmd = last(events, lambda e: e["event"] == "sched:sched_process_exec")
    if cmd and cmd["time"] >= t.get("M", 1e18):
        t["O"] = cmd["time"]
        t["shim"] = cmd["time"] > t["M"]
        bye = first(events, lambda e: e["pid"] == cmd["pid"] and e["event"] == "sched:sched_process_exit", after=t["O"])
        if bye:
            t["P"] = bye["time"]
    mk = [e for e in events if e["event"] == "cgroup:cgroup_mkdir"]
    # attaches into the run's own cgroups (a prewarm attach elsewhere, e.g.
    # of cordon itself to a root cgroup, is counted separately)
    at = [e for e in events if e["event"] == "cgroup:cgroup_attach_task" and e["time"] < t.get("H", 1e18)
          and mk and kv(e["trace"]).get("dst_path") == kv(mk[0]["trace"]).get("path")]
    if mk and at:
        t["F"], t["F1"], t["G"] = mk[0]["time"], at[0]["time"], at[-1]["time"]
        t["ncg"] = len(mk)
        pre = first(events, lambda e: e["event"] == "cgroup:cgroup_attach_task" and e["time"] < t["F"])
        if pre:
            t["P0"] = pre["time"]
    rm = [e for e in events if e["event"] == "cgroup:cgroup_rmdir"]
    if rm:
        t["R"], t["S"] = rm[0]["time"], rm[-1]["time"]
    bye = last(events, lambda e: mine(e) and e["event"] == "syscalls:sys_enter_exit_group")
    t["T"] = bye["time"] if bye else events[-1]["time"]
    return t


PHASES = [
    ("cordon start-up until the run lock (Go runtime, flags, config, mount table, stale-run reaping)", "A", "A2"),
    ("OCI spec, libcontainer config, container state (libcontainer.Create)", "A2", "B"),
    ("exeseal: sealing a copy of /proc/self/exe ({seal_kind})", "B", "C"),
    ("init start prepared (pipes, os/exec pidfd probe) until fork", "C", "D"),
    ("fork + exec of the init", "D", "E"),
    ("init exec until nsexec's first clone (waits for the parent's cgroup set-up)", "E", "H"),
    ("  of which from the init's exec until the first cgroup mkdir", "E", "F"),
    ("  of which cgroup v1: first mkdir until the last attach ({ncg} hierarchies)", "F", "G"),
    ("  of which from the init's exec until an earlier cgroup attach (a prewarm) completed", "E", "P0"),
    ("  of which cgroup v1: first mkdir until the first attach (cgroup.procs write)", "F", "F1"),
    ("nsexec stage-1 (unshare namespaces) until stage-2 fork", "H", "I"),
    ("Go start-up of the re-exec'd init until its first mount", "I", "J"),
    ("mount set-up until pivot_root", "J", "K"),
    ("pivot_root until the seccomp filter is loaded (masks, read-only paths, rlimits)", "K", "L"),
    ("  of which pivot_root until seccomp_init (masks, read-only paths)", "K", "K2"),
    ("  of which libseccomp: adding the profile's rules (seccomp_init until export)", "K2", "K3"),
    ("  of which libseccomp: compiling the filter to BPF (seccomp_export_bpf)", "K3", "K4"),
    ("pivot_root until exec (masks, read-only paths, rlimits; no seccomp compile in the init)", "K", "M"),
    ("seccomp load until exec", "L", "M"),
    ("in-sandbox PID 1 (cordon's own init): exec until the command's exec", "M", "O"),
    ("  of which its start-up until it loads the precompiled seccomp filter", "M", "L2"),
    ("the command itself (exec until exit)", "O", "P"),
    ("command exit until the init's exit", "P", "Q"),
    ("init exit until cordon exits (Destroy, cgroup rmdir, state removal)", "Q", "T"),
    ("  of which cgroup rmdir", "R", "S"),
    ("total: cordon exec until cordon's exit_group", "A", "T"),
]


def main():
    binary, paths = sys.argv[1], sys.argv[2:]
    runs = []
    for p in paths:
        events, switches, tasks = parse(p, binary)
        if not events:
            continue
        m = markers(events)
        # tids of threads that were already running are learnt from the
        # events themselves
        tasks |= {e["tid"] for e in events}
        m["_cpu"] = lambda a, b, sw=switches, ts=tasks: on_cpu(sw, ts, a, b)
        runs.append(m)
    runs = [r for r in runs if "A" in r and "E" in r]
    if not runs:
        print("phases.py: no complete cordon run found in the traces", file=sys.stderr)
        sys.exit(1)
    info = {"seal_kind": next((r["seal_kind"] for r in runs if "seal_kind" in r), "none seen"),
            "ncg": next((r["ncg"] for r in runs if "ncg" in r), 0)}
    print("| phase | median ms | min ms | on-CPU ms | preempted ms |")
    print("|---|---:|---:|---:|---:|")
    for label, a, b in PHASES:
        ok = [r for r in runs if a in r and b in r and r[b] >= r[a]]
        if not ok:
            continue
        if (a, b) == ("M", "O") and not any(r.get("shim") for r in runs):
            continue
        if (a, b) == ("K", "M"):
            ok = [r for r in ok if r.get("KM")]
        elif (a, b) == ("K", "L"):
            ok = [r for r in ok if not r.get("KM")]
        if not ok:
            continue
        d = [(r[b] - r[a]) * 1e3 for r in ok]
        c = [r["_cpu"](r[a], r[b]) for r in ok]
        print(f"| {label.format(**info)} | {statistics.median(d):.2f} | {min(d):.2f} | "
              f"{statistics.median(x[0] for x in c) * 1e3:.2f} | {statistics.median(x[1] for x in c) * 1e3:.2f} |")
    print("\nmedian and min: wall time. on-CPU: the median time the run's processes (all threads) ran in the phase;"
          " preempted: the median time they were runnable but another task had the CPU (load on the machine), from sched_switch."
          " Wall time well above both is time spent blocked (waiting on the kernel or on another process).")
    print(f"\n{len(runs)} traced runs.")


if __name__ == "__main__":
    main()
