#!/usr/bin/env bash
# Profiles where one cordon run spends its time; hack/bench calls it.
#
#   bash hack/bench.d/profile.sh CORDON CONFIG WORKDIR
#
# 1. Phases (root only: perf reads kernel tracepoints): PROFILE_RUNS runs
#    (default 15) of `cordon run --config CONFIG -- true` under a
#    system-wide `perf record` of sched switch/exec/fork/exit, cgroup
#    mkdir/attach/rmdir, a few syscalls (fsopen, fsmount, pivot_root,
#    seccomp, flock, ...) and uprobes on libseccomp (added for the run and
#    removed after it) as markers; hack/bench.d/phases.py prints the median
#    wall and on-CPU time of each phase. The same with the workspace
#    profile, and rootless through setpriv as uid CORDON_BENCH_UID (4242).
# 2. Syscall counts per process (strace -f; counts only, no timings).
# 3. Go start-up: `cordon help` against /usr/bin/true.
# 4. Slow syscalls (perf trace --duration 1): any syscall of the run over 1 ms.
set -Eeuo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
cordon="$(abs "$1")" config="$(abs "$2")" work="$(abs "$3")"
runs="${PROFILE_RUNS:-15}"
uid="${CORDON_BENCH_UID:-4242}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-profile.XXXXXX")"
probes_added=false
cleanup() {
  # The uprobes are global tracing state: remove the ones this script added.
  $probes_added && perf probe -q -d 'probe_libseccomp:*' >/dev/null 2>&1
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

events=(sched:sched_switch sched:sched_process_exec sched:sched_process_fork sched:sched_process_exit
  cgroup:cgroup_mkdir cgroup:cgroup_attach_task cgroup:cgroup_rmdir
  syscalls:sys_enter_flock syscalls:sys_enter_fsopen syscalls:sys_exit_fsmount
  syscalls:sys_enter_open_tree syscalls:sys_enter_memfd_create syscalls:sys_exit_sendfile64 syscalls:sys_enter_mount
  syscalls:sys_enter_pivot_root syscalls:sys_enter_seccomp syscalls:sys_enter_exit_group)
ev="$(IFS=,; echo "${events[*]}")"

echo "### Where a cordon run spends its time"
echo
if [ "$(id -u)" -ne 0 ] || ! command -v perf >/dev/null || [ "$(perf list 'sched:sched_process_exec' 2>/dev/null | grep -c sched_process_exec)" -eq 0 ]; then
  echo "Phase timing skipped: it needs root and perf with kernel tracepoints."
else
  # uprobes on the libseccomp that cordon links, to time the filter's
  # compilation inside the init.
  lib="$( (ldd "$cordon" 2>/dev/null || true) | awk '/libseccomp/ {print $3}')" # none when static
  if [ -n "$lib" ] && ! perf probe -l 2>/dev/null | grep -c probe_libseccomp >/dev/null &&
    perf probe -q -x "$lib" -a seccomp_init -a seccomp_export_bpf -a 'seccomp_export_bpf%return' >/dev/null 2>&1; then
    probes_added=true
  fi
  perf probe -l 2>/dev/null | grep -c probe_libseccomp >/dev/null && ev="$ev,probe_libseccomp:*"
  # phases LABEL PREFIX... : perf-record $runs runs of PREFIX cordon run ... -- true
  phases() {
    local label="$1" dir="$2"
    shift 2
    local i traces=()
    for ((i = 0; i < runs + 2; i++)); do
      (cd "$dir" && perf record -a -q -o "$tmp/p.data" -e "$ev" -- "$@" >/dev/null 2>"$tmp/perf.err") ||
        { echo "perf record failed: $(tail -n 3 "$tmp/perf.err")"; return 0; }
      [ "$i" -lt 2 ] && continue # warm-ups
      perf script -i "$tmp/p.data" -F comm,pid,tid,cpu,time,event,trace >"$tmp/trace.$label.$i" 2>/dev/null
      traces+=("$tmp/trace.$label.$i")
    done
    python3 "$here/phases.py" "$bin" "${traces[@]}"
  }
  # A copy of its own, so that other cordon runs on the machine are not
  # mistaken for this one in the system-wide trace.
  bin="$tmp/cordon-profiled"
  cp "$cordon" "$bin"
  echo "#### As root ($(uname -r), cgroups on), \`cordon run --config bench.yaml -- true\`"
  echo
  phases root "$work" "$bin" run --config "$config" -- true
  echo
  echo "#### As root, the workspace profile (20 default protect paths: placeholders and read-only rebinds)"
  echo
  phases workspace "$work" "$bin" run --profile workspace -- true
  echo
  if command -v setpriv >/dev/null; then
    rl="$tmp/rootless"
    mkdir -p "$rl/work"
    cp "$cordon" "$rl/cordon"
    bin="$rl/cordon"
    cp "$config" "$rl/bench.yaml"
    chown -R "$uid:$uid" "$rl"
    chmod 755 "$tmp"
    echo "#### Rootless (uid $uid through setpriv, no cgroups), same command"
    echo
    phases rootless "$rl/work" setpriv --reuid="$uid" --regid="$uid" --clear-groups \
      env HOME="$rl" TMPDIR="$rl" PATH="$PATH" "$rl/cordon" run --config "$rl/bench.yaml" -- true
    echo
  fi
fi

echo "#### cordon's own phase log (CORDON_LOG=debug), median of $runs runs"
echo
for ((i = 0; i < runs; i++)); do
  (cd "$work" && CORDON_LOG=debug CORDON_LOG_FORMAT=json "$cordon" run --config "$config" -- true 2>&1 >/dev/null) | grep '"run phases"' || true
done >"$tmp/phaselog"
python3 - "$tmp/phaselog" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = [k for k in (rows[0] if rows else {}) if k.endswith("_ms")]
if not rows:
    print("(no `run phases` debug line: this cordon does not log its phases)")
else:
    print("| phase (runner/phases.go) | median ms |\n|---|---:|")
    for k in keys:
        print(f"| {k[:-3]} | {statistics.median(r[k] for r in rows if k in r):.2f} |")
EOF
echo

if command -v strace >/dev/null; then
  echo "#### Syscalls per process of one run (strace -f, counts only)"
  echo
  (cd "$work" && strace -f -o "$tmp/strace.out" "$cordon" run --config "$config" -- true) >/dev/null 2>&1 || true
  python3 "$here/syscounts.py" "$tmp/strace.out"
  echo
fi

echo "#### Go start-up of the cordon binary ($(du -m "$cordon" | cut -f1) MB)"
echo
bc="${BENCHCMP:-}"
if [ -z "$bc" ]; then
  bc="$tmp/benchcmp"
  (cd "$here/../.." && go build -o "$bc" ./hack/benchcmp)
fi
printf '%s\t%s\t%s\t%s\t%s\n' "/usr/bin/true" "true" - "$work" /usr/bin/true >"$tmp/startup.tsv"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "cordon help" "help" - "$work" "$cordon" help >>"$tmp/startup.tsv"
"$bc" -cases "$tmp/startup.tsv" -n 30 -warmup 3 -ref "cordon help" | sed -n '1,4p'
echo

if [ "$(id -u)" -eq 0 ] && command -v perf >/dev/null; then
  echo "#### Syscalls over 1 ms in one run (perf trace --duration 1; blocking waits left out)"
  echo
  echo '```'
  (cd "$work" && perf trace --duration 1 -- "$cordon" run --config "$config" -- true 2>&1 >/dev/null) |
    grep -vE 'futex|epoll_pwait|nanosleep|wait4|waitid|recvfrom|sched_yield|read\(fd: [0-9]+<(socket|pipe)' | head -n 25 || true
  echo '```'
fi
