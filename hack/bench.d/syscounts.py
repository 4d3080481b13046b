#!/usr/bin/env python3
"""Count the syscalls of one `cordon run` by process role, from strace.

Usage: syscounts.py TRACE, where TRACE is the output of
`strace -f -o TRACE cordon run ... -- CMD`.

Threads are folded into their process (clone with CLONE_THREAD). Roles:
cordon (the parent), the init before nsexec clones (nsexec stage-0), its
first child (stage-1), the init that sets the sandbox up (stage-2, until it
execs), the process that the stage-2 init execs into (a shim or the
command), and the command. The counts are exact; strace's timings are not
used, as ptrace inflates them.
"""
import collections
import re
import sys

HEAD = re.compile(r"^(\d+)\s+(?:\d+\.\d+\s+)?(.*)$")
CALL = re.compile(r"^([a-z_0-9]+)\(")
RESUMED = re.compile(r"^<\.\.\. ([a-z_0-9]+) resumed>")


def main():
    tgid = {}
    role = {}
    counts = collections.defaultdict(collections.Counter)
    order = []
    pending_clone = {}
    with open(sys.argv[1]) as f:
        lines = f.readlines()
    first_pid = None
    for line in lines:
        m = HEAD.match(line)
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        if first_pid is None:
            first_pid = pid
            tgid[pid] = pid
            role[pid] = "cordon"
            order.append("cordon")
        g = tgid.setdefault(pid, pid)
        c = CALL.match(rest)
        r = RESUMED.match(rest)
        name = c.group(1) if c else (r.group(1) if r else None)
        if name is None:
            continue
        if c:
            counts[role.get(g, "other")][name] += 1
        if name in ("clone", "clone3", "vfork", "fork"):
            if c and "<unfinished" in rest:
                pending_clone[pid] = rest
                continue
            text = pending_clone.pop(pid, "") + rest
            res = re.search(r"= (\d+)", rest)
            if res:
                child = int(res.group(1))
                if "CLONE_THREAD" in text:
                    tgid[child] = g
                elif child in role:
                    pass  # a vfork child that already exec'd has its role
                else:
                    tgid[child] = child
                    parent_role = role.get(g, "other")
                    if parent_role == "nsexec stage-0":
                        role[child] = "nsexec stage-1"
                    elif parent_role == "nsexec stage-1":
                        role[child] = "stage-2 init"
                    elif parent_role in ("shim", "stage-2 init"):
                        role[child] = "command"
                    else:
                        role[child] = parent_role + " child"
                    if role[child] not in order:
                        order.append(role[child])
        if name == "execve" and c:
            prog = re.search(r'execve\("([^"]*)"', rest)
            p = prog.group(1) if prog else ""
            cur = role.get(g, "other")
            if p.startswith("/proc/self/fd/") or p.startswith("/memfd:") or (cur != "cordon" and '"init"' in rest):
                role[g] = "nsexec stage-0"
            elif cur == "stage-2 init":
                role[g] = "shim" if "/proc/self/exe" in p else "command"
            elif cur in ("other", "shim", "shim child"):
                role[g] = "command"
            else:
                continue
            if role[g] not in order:
                order.append(role[g])
    print("| process | syscalls | top syscalls |")
    print("|---|---:|---|")
    for r in order:
        cnt = counts.get(r)
        if not cnt:
            continue
        top = ", ".join(f"{n} {k}" for k, n in cnt.most_common(8))
        print(f"| {r} | {sum(cnt.values())} | {top} |")


if __name__ == "__main__":
    main()
