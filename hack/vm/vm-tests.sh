#!/bin/sh
# The VM lane's cases, run by hack/vm/init inside a cgroup v2 VM as root. Each
# case runs as root; as uid 4242 in a cgroup delegated the way systemd
# delegates user@.service (root creates user.slice/user-4242 with the
# controllers enabled and chowns it), with no systemd; as uid 4244 from a
# root-owned cgroup, with its own systemd (systemd --user in the
# delegated user.slice/user-4244, as user@4244.service) on its D-Bus; then
# the refusal of limits to a user with neither (uid 4243). It prints
# "PASS name" or "FAIL name: why" per case; hack/vm/run.sh counts them.
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; }

cg=/sys/fs/cgroup
deleg=$cg/user.slice/user-4242

# field FILE KEY prints the value of a JSON report's "KEY": "value" or number.
field() { sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }

# as WHO CMD...: runs CMD as root or as uid 4242/4243 (setpriv), in WHO's
# workspace, with WHO's environment.
as() {
  who=$1
  shift
  case $who in
    root) (cd /root/ws && env HOME=/root "$@") ;;
    *)
      xdg=""
      [ -d /run/user/$who ] && xdg=XDG_RUNTIME_DIR=/run/user/$who
      (cd /home/$who/ws && /usr/bin/setpriv --reuid="$who" --regid="$who" --clear-groups --inh-caps=-all \
        env -i HOME=/home/$who TMPDIR=/home/$who/tmp PATH=/bin:/usr/bin $xdg "$@") ;;
  esac
}

# crun WHO NAME ARGS...: cordon run ARGS as WHO, report in /tmp/NAME.WHO.json,
# stderr in /tmp/NAME.WHO.err.
crun() {
  who=$1 name=$2
  shift 2
  rep=/tmp/$name.$who.json
  rm -f "$rep"
  # A cordon that never returns fails its case with what was running,
  # instead of stalling the VM until the host kills it.
  as "$who" timeout -s KILL 120 cordon run --report "$rep" "$@" >/tmp/$name.$who.out 2>/tmp/$name.$who.err
  rc=$?
  echo $rc >/tmp/$name.$who.rc
  if [ $rc = 137 ] && [ ! -s "$rep" ]; then
    echo "cordon run ($name, $who) did not return in 120 s; processes:" >>/tmp/$name.$who.err
    ps -o pid,ppid,user,stat,args >>/tmp/$name.$who.err 2>&1
    cat /tmp/$name.$who.err
  fi
  [ -f "$rep" ] && chmod 644 "$rep"
  return 0
}

# expect CASE WHO TYPE: the run's report says failure_type TYPE.
expect() {
  rep=/tmp/$1.$2.json
  got=$(field "$rep" failure_type 2>/dev/null)
  if [ "$got" = "$3" ]; then
    ok "$1 ($2): $3"
  else
    bad "$1 ($2)" "failure_type '$got', want $3; rc $(cat /tmp/$1.$2.rc); stderr: $(tail -n 3 /tmp/$1.$2.err | tr '\n' ' ')"
  fi
}

# runcg WHO: the cgroup directory a run of WHO lives in (parent of cordon-*).
runcg() {
  case $1 in
    root) echo $cg/cordon ;;
    4244) echo $cg/user.slice/user-4244/user.slice ;; # systemd's cordon-<id>.scope
    *) echo $deleg ;;
  esac
}

case_run() {
  crun "$1" run --timeout 60s -- sh -c 'echo hello-from-the-sandbox; id -u'
  if [ "$(head -n 1 /tmp/run.$1.out)" = hello-from-the-sandbox ]; then expect run "$1" none; else
    bad "run ($1)" "stdout '$(cat /tmp/run.$1.out)', stderr: $(tail -n 3 /tmp/run.$1.err | tr '\n' ' ')"; fi
}

case_memory() {
  # dd's 64 MiB buffer is touched in full by its one read: over a 32 MiB
  # limit. The OOM killer kills dd alone, on every path: the shell goes on
  # (systemd, which would stop the whole scope, is told to continue).
  crun "$1" oom --timeout 60s --memory 32MiB -- sh -c 'dd if=/dev/zero of=/dev/null bs=64M count=1; sleep 1; echo survived'
  if grep -q survived /tmp/oom.$1.out; then expect oom "$1" oom; else
    bad "oom ($1)" "the shell did not survive its child's OOM kill; stdout '$(cat /tmp/oom.$1.out)'"; fi
}

case_pids() {
  # Twenty background sleeps under a limit of 8: the pids controller
  # refuses the ninth fork, and the run is typed from its counter.
  crun "$1" pids --timeout 60s --pids 8 -- sh -c 'i=0; while [ $i -lt 20 ]; do sleep 30 & i=$((i+1)); done; wait'
  expect pids "$1" pids_limit
}

case_cpu() {
  # A busy loop under cpus: 0.5 runs until its timeout; meanwhile its cgroup
  # must carry the quota and be throttled.
  dir=$(as "$1" pwd)
  printf 'sandbox:\n  root: .\n  system: host\n  require_os_sandbox: true\n  limits: {cpus: 0.5, timeout: 6s}\naudit_required: false\n' >/tmp/cpu.yaml
  cp /tmp/cpu.yaml "$dir/cpu.yaml"
  [ "$1" = root ] || chown "$1" "$dir/cpu.yaml"
  crun "$1" cpu --config cpu.yaml -- sh -c 'while :; do :; done' &
  bg=$!
  base=$(runcg "$1") quota="" throttled=0 i=0
  while [ $i -lt 600 ] && kill -0 $bg 2>/dev/null; do
    for d in "$base"/cordon-*; do
      [ -f "$d/cpu.max" ] || continue
      quota=$(cat "$d/cpu.max")
      throttled=$(sed -n 's/^nr_throttled //p' "$d/cpu.stat")
    done
    [ "${throttled:-0}" -gt 0 ] && break
    i=$((i + 1))
    sleep 0.1
  done
  wait $bg
  if [ "$quota" != "50000 100000" ]; then bad "cpu ($1)" "cpu.max '$quota', want '50000 100000'"
  elif [ "${throttled:-0}" -le 0 ]; then bad "cpu ($1)" "never throttled"
  else expect cpu "$1" timeout; fi
}

case_escape() {
  # The run's cgroup belongs to the caller's uid, which the sandbox runs as
  # on the host: the command must not reach it to lift its own limit. It
  # tries to mount cgroup2, to find and write cgroup files, then allocates
  # over the limit, which must still kill it.
  crun "$1" escape --timeout 60s --memory 32MiB -- sh -c '
    mkdir -p cg && mount -t cgroup2 none cg 2>/dev/null && echo MOUNTED
    for f in /sys/fs/cgroup/memory.max cg/memory.max; do [ -e "$f" ] && echo "SEEN $f" && echo max >"$f" 2>/dev/null && echo "RAISED $f"; done
    dd if=/dev/zero of=/dev/null bs=64M count=1'
  if grep -q -E 'MOUNTED|SEEN|RAISED' /tmp/escape.$1.out; then
    bad "escape ($1)" "the sandbox reached a cgroup: $(tr '\n' ' ' </tmp/escape.$1.out)"
  else
    expect escape "$1" oom
  fi
}

case_timeout() {
  crun "$1" timeout --timeout 1s -- sh -c 'sleep 30 & sleep 30'
  expect timeout "$1" timeout
}

# case_session: a warm session on cgroup v2, as WHO: execs run, an exec's
# OOM kill is typed oom (the session's memory limit, shared by its execs),
# the next exec still runs, and session stop leaves nothing (case_leftovers
# runs after it).
case_session() {
  n=vm-$1
  got=$(as "$1" timeout -s KILL 60 cordon session start --memory 32MiB --name "$n" 2>/tmp/session.$1.err)
  if [ "$got" != "$n" ]; then
    bad "session ($1)" "start printed '$got': $(tail -n 3 /tmp/session.$1.err | tr '\n' ' ')"
    return
  fi
  one=$(as "$1" timeout -s KILL 60 cordon exec "$n" -- sh -c 'echo one' 2>>/tmp/session.$1.err)
  rm -f /tmp/session-oom.$1.json
  as "$1" timeout -s KILL 60 cordon exec --report /tmp/session-oom.$1.json "$n" -- \
    sh -c 'dd if=/dev/zero of=/dev/null bs=64M count=1' >/dev/null 2>>/tmp/session.$1.err
  oom=$(field /tmp/session-oom.$1.json failure_type 2>/dev/null)
  two=$(as "$1" timeout -s KILL 60 cordon exec "$n" -- sh -c 'echo two' 2>>/tmp/session.$1.err)
  as "$1" timeout -s KILL 60 cordon session stop "$n" 2>>/tmp/session.$1.err
  if [ "$one" = one ] && [ "$oom" = oom ] && [ "$two" = two ]; then
    ok "session ($1): execs, oom, stop"
  else
    bad "session ($1)" "execs '$one' '$two', oom exec '$oom': $(tail -n 3 /tmp/session.$1.err | tr '\n' ' ')"
  fi
}

# case_sessionleaf: per-exec cgroups in a warm session, as WHO. Two execs
# run at once under the session's 48 MiB: one allocates 96 MiB and is
# typed oom, the other (which tries to move itself out of its cgroup first,
# through /sys/fs/cgroup and through its shim's descriptors, which hold the
# leaf's and the init leaf's cgroup.procs) sees its own leaf in
# /proc/self/cgroup, outlives the OOM kill and is
# typed none. Once both ended no exec's leaf is left under the session's
# cgroup, whose processes all sit in its init leaf.
case_sessionleaf() {
  n=vmleaf-$1
  got=$(as "$1" timeout -s KILL 60 cordon session start --memory 48MiB --name "$n" 2>/tmp/leaf.$1.err)
  if [ "$got" != "$n" ]; then
    bad "sessionleaf ($1)" "start printed '$got': $(tail -n 3 /tmp/leaf.$1.err | tr '\n' ' ')"
    return
  fi
  rm -f /tmp/leaf-a.$1.json /tmp/leaf-b.$1.json
  as "$1" timeout -s KILL 60 cordon exec --report /tmp/leaf-a.$1.json "$n" -- sh -c \
    'echo 0 >/sys/fs/cgroup/cgroup.procs; echo 0 >/sys/fs/cgroup/init/cgroup.procs; for f in /proc/$PPID/fd/*; do echo 0 >"$f"; done; cat /proc/self/cgroup; sleep 3; echo survived' \
    >/tmp/leaf-a.$1.out 2>>/tmp/leaf.$1.err &
  apid=$!
  sleep 1
  as "$1" timeout -s KILL 60 cordon exec --report /tmp/leaf-b.$1.json "$n" -- \
    sh -c 'dd if=/dev/zero of=/dev/null bs=96M count=1' >/dev/null 2>>/tmp/leaf.$1.err
  wait $apid
  a=$(field /tmp/leaf-a.$1.json failure_type 2>/dev/null)
  b=$(field /tmp/leaf-b.$1.json failure_type 2>/dev/null)
  cgline=$(head -n 1 /tmp/leaf-a.$1.out)
  sleep 1
  left="" inroot=""
  for d in "$(runcg "$1")"/cordon-*; do
    [ -d "$d" ] || continue
    for x in "$d"/x*; do [ -d "$x" ] && left="$left $x"; done
    [ -n "$(cat "$d/cgroup.procs" 2>/dev/null)" ] && inroot="$inroot $d"
  done
  # An exec's own --memory narrows the session's for it alone: 32 MiB in
  # a 16 MiB exec is typed oom (by its own limit); a limit above the
  # session's is refused before the command runs.
  rm -f /tmp/leaf-c.$1.json
  as "$1" timeout -s KILL 60 cordon exec --memory 16MiB --report /tmp/leaf-c.$1.json "$n" -- \
    sh -c 'dd if=/dev/zero of=/dev/null bs=32M count=1' >/dev/null 2>>/tmp/leaf.$1.err
  c=$(field /tmp/leaf-c.$1.json failure_type 2>/dev/null)
  cdetail=$(field /tmp/leaf-c.$1.json failure_detail 2>/dev/null)
  as "$1" timeout -s KILL 60 cordon exec --memory 1GiB "$n" -- sh -c 'echo ran-wide' >/tmp/leaf-d.$1.out 2>/tmp/leaf-d.$1.err
  drc=$?
  as "$1" timeout -s KILL 60 cordon session stop "$n" 2>>/tmp/leaf.$1.err
  case $cgline in 0::/x[0-9]*) leafok=1 ;; *) leafok=0 ;; esac
  case $cdetail in *"--memory"*) cok=1 ;; *) cok=0 ;; esac
  if [ "$a" = none ] && [ "$b" = oom ] && [ $leafok = 1 ] && grep -q survived /tmp/leaf-a.$1.out && [ -z "$left$inroot" ] &&
    [ "$c" = oom ] && [ $cok = 1 ] && [ $drc = 125 ] && grep -q "above the session" /tmp/leaf-d.$1.err && ! grep -q ran-wide /tmp/leaf-d.$1.out; then
    ok "sessionleaf ($1): oom typed for its exec only, leaf $cgline, no leaf left, --memory narrows and cannot widen"
  else
    bad "sessionleaf ($1)" "exec a '$a' (cgroup '$cgline', out: $(tr '\n' ' ' </tmp/leaf-a.$1.out)), exec b '$b', leaves left:$left, processes in the session cgroup:$inroot, --memory 16MiB '$c' ($cdetail), --memory 1GiB rc $drc: $(tr '\n' ' ' </tmp/leaf-d.$1.err); $(tail -n 3 /tmp/leaf.$1.err | tr '\n' ' ')"
  fi
}

# case_sessionkill: SIGKILL of a session's supervisor leaves no exec leaf,
# as WHO. A detached exec (its leaf lives as long as it does) and a
# running exec (a leaf with a background child) each hold a leaf under the
# session's cgroup; the supervisor is killed with SIGKILL; within a few
# seconds its reaper has removed the session's cgroup with every leaf in
# it, and no process of either exec is left (case_leftovers checks too).
case_sessionkill() {
  n=vmkill-$1
  got=$(as "$1" timeout -s KILL 60 cordon session start --memory 48MiB --name "$n" 2>/tmp/kill.$1.err)
  if [ "$got" != "$n" ]; then
    bad "sessionkill ($1)" "start printed '$got': $(tail -n 3 /tmp/kill.$1.err | tr '\n' ' ')"
    return
  fi
  as "$1" timeout -s KILL 60 cordon exec --detach "$n" -- sh -c 'sleep 30 >/dev/null 2>&1 &' >/dev/null 2>>/tmp/kill.$1.err
  as "$1" timeout -s KILL 60 cordon exec "$n" -- sh -c 'sleep 30 & sleep 30' >/dev/null 2>>/tmp/kill.$1.err &
  epid=$!
  # Wait (TCG is slow) until both execs hold their leaf.
  i=0 before=0
  while [ $i -lt 100 ] && [ $before -lt 2 ]; do
    sleep 0.2
    i=$((i + 1))
    before=0
    for d in "$(runcg "$1")"/cordon-*; do
      for x in "$d"/x*; do [ -n "$(cat "$x/cgroup.procs" 2>/dev/null)" ] && before=$((before + 1)); done
    done
  done
  sup=""
  for p in /proc/[0-9]*; do
    c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
    case $c in *"session start"*"--name $n"*) sup=${p#/proc/} ;; esac
  done
  [ -n "$sup" ] && kill -KILL "$sup"
  wait $epid
  i=0 left="x"
  while [ $i -lt 50 ] && [ -n "$left" ]; do
    sleep 0.2
    i=$((i + 1))
    left=""
    for d in "$(runcg "$1")"/cordon-*; do [ -d "$d" ] && left="$left $d"; done
  done
  if [ "$before" -ge 2 ] && [ -n "$sup" ] && [ -z "$left" ]; then
    ok "sessionkill ($1): $before leaves before SIGKILL of the supervisor, none after"
  else
    bad "sessionkill ($1)" "leaves with processes before: $before, supervisor '$sup', left after: $left; $(tail -n 3 /tmp/kill.$1.err | tr '\n' ' ')"
  fi
}

# case_leftovers: no run's cgroup, state or process is left.
case_leftovers() {
  left=""
  for d in "$(runcg "$1")"/cordon-*; do [ -d "$d" ] && left="$left cgroup:$d"; done
  case $1 in
    root) st=/run/cordon ;;
    4244) st=/run/user/4244/cordon ;;
    *) st=/home/$1/tmp/cordon-$1 ;;
  esac
  for d in "$st"/runs/* "$st"/lc/*; do [ -e "$d" ] && left="$left state:$d"; done
  for p in /proc/[0-9]*; do
    c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
    case $c in "sleep 30"*|*"while :"*) left="$left process:${p#/proc/}($c)" ;; esac
  done
  if [ -z "$left" ]; then ok "leftovers ($1): none"; else bad "leftovers ($1)" "$left"; fi
}

# case_leaves: the no-internal-processes rule holds in the delegated cgroup:
# its processes moved into its leaf, the controllers are on for its
# children, and nothing runs in it.
case_leaves() {
  procs=$(cat $deleg/cgroup.procs)
  on=$(cat $deleg/cgroup.subtree_control)
  if [ -n "$procs" ]; then bad "leaves ($1)" "processes left in $deleg: $procs"
  elif [ ! -d $deleg/leaf ]; then bad "leaves ($1)" "no $deleg/leaf"
  elif [ "$on" != "cpu memory pids" ]; then bad "leaves ($1)" "subtree_control '$on'"
  else ok "leaves ($1): processes in leaf, $on on for the children"; fi
}

# The refusal for a user without delegation must name what would make it work.
case_refusal() {
  crun "$1" refused --timeout 60s --memory 32MiB -- true
  if [ "$(cat /tmp/refused.$1.rc)" != 0 ] && grep -q "delegat" /tmp/refused.$1.err && grep -q "systemd-run --user --scope" /tmp/refused.$1.err; then
    ok "refusal ($1): limits refused with the way out"
  else
    bad "refusal ($1)" "rc $(cat /tmp/refused.$1.rc); stderr: $(tail -n 3 /tmp/refused.$1.err | tr '\n' ' ')"
  fi
  case_leftovers "$1"
}

# case_doctor WHO MARK WANT: doctor's "rootless limits" row is marked MARK
# (ok or NO) and says WANT.
case_doctor() {
  row=$(as "$1" cordon doctor 2>&1 | grep 'rootless limits')
  case $row in
    "$2 "*"$3"*) ok "doctor ($1): $2, $3" ;;
    *) bad "doctor ($1)" "row '$row', want $2 and '$3'" ;;
  esac
}

# Cold start: the same short run ten times, timed here (ms per run); hack/vm/run.sh times it on the
# host and prints the ratio.
case_coldstart() {
  t0=$(cut -d' ' -f1 /proc/uptime)
  i=0
  failed=0
  while [ $i -lt 10 ]; do as root cordon run -- true >/dev/null 2>&1 || failed=1; i=$((i + 1)); done
  t1=$(cut -d' ' -f1 /proc/uptime)
  [ $failed = 0 ] && echo "COLDSTART-MS $(echo "$t0 $t1" | awk '{printf "%d", ($2 - $1) * 100}')"
}

setup() {
  mkdir -p /etc /root/ws
  : >/etc/passwd
  : >/etc/group
  echo 'root:x:0:0:root:/root:/bin/sh' >>/etc/passwd
  echo 'root:x:0:' >>/etc/group
  for u in 4242 4243 4244; do
    echo "u$u:x:$u:$u::/home/$u:/bin/sh" >>/etc/passwd
    echo "u$u:x:$u:" >>/etc/group
    mkdir -p /home/$u/ws /home/$u/tmp
    chown -R $u:$u /home/$u
  done
  # What systemd does for user@4242.service (Delegate=yes).
  mkdir -p $deleg
  echo "+memory +pids +cpu" >$cg/user.slice/cgroup.subtree_control
  chown 4242:4242 $deleg $deleg/cgroup.procs $deleg/cgroup.subtree_control $deleg/cgroup.threads
  # uid 4243 gets a cgroup it does not own: no delegation.
  mkdir -p $cg/user.slice/user-4243
}

# start_systemd UID: what logind and user@UID.service do: a runtime
# directory, a delegated cgroup, and the user's systemd in it, which starts
# the user's D-Bus (dbus.socket). It returns once systemd answers there.
# /run/systemd/system tells systemd the machine runs systemd (this VM's
# init is a shell).
start_systemd() {
  u=$1 d=$cg/user.slice/user-$1
  mkdir -p /run/systemd/system /run/user/$u /var/lib/dbus
  [ -s /etc/machine-id ] || echo 6f1e0c0a8e6b4c3d9a2b1c0d9e8f7a6b >/etc/machine-id
  cp /etc/machine-id /var/lib/dbus/machine-id
  chown $u:$u /run/user/$u
  chmod 700 /run/user/$u
  mkdir -p $d
  chown $u:$u $d $d/cgroup.procs $d/cgroup.subtree_control $d/cgroup.threads
  # shellcheck disable=SC2016
  sh -c 'echo $$ >"$0/cgroup.procs" && exec /usr/bin/setpriv --reuid="$1" --regid="$1" --clear-groups --inh-caps=-all \
    env -i HOME=/home/$1 XDG_RUNTIME_DIR=/run/user/$1 PATH=/bin:/usr/bin /lib/systemd/systemd --user' \
    "$d" "$u" >/tmp/systemd.$u.log 2>&1 &
  i=0
  while [ $i -lt 600 ]; do
    as "$u" busctl --user call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.DBus.Peer Ping >/dev/null 2>&1 && return 0
    i=$((i + 1))
    sleep 0.1
  done
  echo "the systemd of uid $u did not answer on its D-Bus: $(tail -n 5 /tmp/systemd.$u.log | tr '\n' ' ')"
  return 1
}

# With "cases WHO", run every case as WHO (this process must already be in
# the cgroup WHO's runs start from); the header above is shared.
if [ "$1" = refusal ]; then
  case_refusal "$2"
  case_doctor "$2" NO "is not delegated to uid $2"
  exit 0
fi
if [ "$1" = cases ]; then
  for c in run memory pids cpu escape timeout session sessionleaf sessionkill leftovers; do case_$c "$2"; done
  case $2 in
    4242)
      case_leaves "$2"
      case_doctor "$2" ok "delegated cgroup /user.slice/user-$2"
      ;;
    4244) case_doctor "$2" ok "the user's systemd (cgroup /user.slice/user-$2" ;;
  esac
  exit 0
fi

setup
echo "== cgroup v2 ($(cat $cg/cgroup.subtree_control)), kernel $(uname -r)"
echo "== as root"
sh "$0" cases root
echo "== as uid 4242, from the cgroup delegated to it ($deleg)"
# shellcheck disable=SC2016
sh -c 'echo $$ >"$1/cgroup.procs" && exec sh "$0" cases 4242' "$0" "$deleg"
echo "== as uid 4244, from a cgroup it does not own, with its systemd on its D-Bus"
# The caller sits in a root-owned cgroup inside the user's systemd tree. (A
# login shell sits in logind's session scope outside it, and the user's
# systemd asks PID 1 to move the run's init into its scope; this VM has no
# systemd as PID 1, so the caller is where the user's systemd can move it.)
if start_systemd 4244; then
  mkdir -p $cg/user.slice/user-4244/vm-cases
  # shellcheck disable=SC2016
  sh -c 'echo $$ >"$1/cgroup.procs" && exec sh "$0" cases 4244' "$0" "$cg/user.slice/user-4244/vm-cases"
fi
echo "== as uid 4243, with no delegated cgroup"
# shellcheck disable=SC2016
sh -c 'echo $$ >"$1/cgroup.procs" && exec sh "$0" refusal 4243' "$0" "$cg/user.slice/user-4243"
case_coldstart
