#!/usr/bin/env bash
# Escape suite: runs hostile commands through `cordon run --report R` and
# asserts, for each, both the failure cordon reports (exit code,
# failure_type, blocked_path) and the absence of the side effect on the host
# (file not created, content hash unchanged, listener not reached, no
# process left). It prints `PASS name` or `FAIL name: why` per case and ends
# with the line `N passed, N failed`; it exits non-zero on any failure.
#
# It passes both as root and as an unprivileged user (hack/test-rootless.sh
# runs it again through setpriv). Cases that need cgroups run as root only;
# as any other user they assert that the same limits fail closed instead.
#
#   CORDON_BIN=bin/cordon bash hack/escape-suite.sh [CASE...]
set -Eeuo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
CORDON="${CORDON_BIN:-$repo/bin/cordon}"
case "$CORDON" in /*) ;; *) CORDON="$PWD/$CORDON" ;; esac
if [ ! -x "$CORDON" ]; then
  echo "escape-suite: $CORDON is not an executable; build it (make build) or set CORDON_BIN" >&2
  exit 2
fi
command -v python3 >/dev/null || { echo "escape-suite: python3 is needed to read the JSON reports" >&2; exit 2; }

uid="$(id -u)"
is_root=false
[ "$uid" -eq 0 ] && is_root=true
rand="$$-$RANDOM$RANDOM"
base="$(mktemp -d "${TMPDIR:-/tmp}/cordon-escape.XXXXXX")"
ws="$base/ws"            # the workspace: the sandbox's only rw host directory
outside="$base/outside"  # a host directory no mount shows
mkdir -p "$ws" "$outside" "$base/cases"
bg_pids=()
host_mounts=()

# stop_case_helpers ends the helper processes and fixture mounts of a case.
# Cases run in subshells, so each subshell calls it on its own exit.
stop_case_helpers() {
  local p m
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for m in "${host_mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
  bg_pids=()
  host_mounts=()
}
cleanup() {
  stop_case_helpers
  rm -rf --one-file-system "$base" 2>/dev/null || true
}
trap cleanup EXIT

# sha FILE prints the SHA-256 of FILE, or "missing".
sha() { if [ -e "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo missing; fi; }

# The exit status the host's sh gives to a failed redirection (2 for dash),
# so cases can assert the command's own status.
sh_redir_fail="$(sh -c 'echo x >/nonexistent-cordon-dir/f' 2>/dev/null; echo $?)" || true

# ---- running one case ------------------------------------------------------
# Each case runs in a subshell with its own directory $d; the last line it
# prints is the reason it failed.

RC=0
# crun [run flags...] -- CMD...: cordon run in the workspace, with the report
# in $d/report.json, stdout in $d/out and stderr in $d/err. Sets RC.
crun() {
  rm -f "$d/report.json"
  RC=0
  (cd "$ws" && exec timeout -k 5 "${CASE_LIMIT:-60}" "$CORDON" run --report "$d/report.json" "$@") \
    <"${CASE_STDIN:-/dev/null}" >"$d/out" 2>"$d/err" || RC=$?
}

# rget KEY prints a top-level field of the report ("" when absent).
rget() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
v=d.get(sys.argv[2])
print("" if v is None else v)' "$d/report.json" "$1" 2>/dev/null
}

errtail() {
  local t
  t="$(tail -n 3 "$d/err" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
  [ -n "$t" ] && printf ' [stderr: %s]' "$t"
  return 0
}

have_report() {
  [ -s "$d/report.json" ] || { echo "no report written (cordon exit $RC)$(errtail)"; return 1; }
}

want_exit() {
  [ "$RC" = "$1" ] || { echo "exit $RC, want $1$(errtail)"; return 1; }
}

# want_own_failure: the command ran and failed on its own (1-123), so the
# sandbox was set up and did not time out.
want_own_failure() {
  if [ "$RC" -eq 0 ] || [ "$RC" -ge 124 ]; then
    echo "exit $RC, want the command's own failure status (1-123)$(errtail)"
    return 1
  fi
}

want_ft() {
  have_report || return 1
  local got w
  got="$(rget failure_type)"
  for w in "$@"; do [ "$got" = "$w" ] && return 0; done
  echo "failure_type '$got', want $(echo "$*" | sed 's/ / or /g'); detail: $(rget failure_detail)$(errtail)"
  return 1
}

want_blocked() {
  have_report || return 1
  local got w
  got="$(rget blocked_path)"
  for w in "$@"; do [ "$got" = "$w" ] && return 0; done
  echo "blocked_path '$got', want $(echo "$*" | sed 's/ / or /g'); detail: $(rget failure_detail)"
  return 1
}

# want_blocked_under DIR: blocked_path is DIR or below it.
want_blocked_under() {
  have_report || return 1
  local got
  got="$(rget blocked_path)"
  case "$got" in "$1" | "$1"/*) return 0 ;; esac
  echo "blocked_path '$got', want $1 or a path below it; detail: $(rget failure_detail)"
  return 1
}

# want_denied PATH...: the command's own failure, typed sandbox_denied, with
# one of PATH... as the blocked path.
want_denied() {
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked "$@"
}

want_absent() {
  if [ -e "$1" ] || [ -L "$1" ]; then echo "$1 exists on the host"; return 1; fi
}

want_hash() {
  [ "$(sha "$1")" = "$2" ] || { echo "$1 changed on the host"; return 1; }
}

want_out_lacks() {
  if grep -qF -- "$1" "$d/out" 2>/dev/null; then echo "stdout shows '$1': $(head -c 200 "$d/out" | tr '\n' ' ')"; return 1; fi
}

# procs_matching TEXT prints the host pids whose command line contains TEXT.
procs_matching() {
  local p
  for p in /proc/[0-9]*; do
    if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$1"; then echo "${p#/proc/}"; fi
  done
}

# wait_gone TEXT SECONDS: no host process with TEXT in its command line
# within SECONDS.
wait_gone() {
  local i left
  for ((i = 0; i < $2 * 10; i++)); do
    left="$(procs_matching "$1")"
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "process still running on the host: pid $left ($1)"
  return 1
}

# ---- fixtures ---------------------------------------------------------------

git_config_text='[core]
	repositoryformatversion = 0
	bare = false'
reset_ws() {
  rm -rf --one-file-system "$ws"
  mkdir -p "$ws/.git"
  printf '%s\n' "$git_config_text" >"$ws/.git/config"
  printf 'SECRET-%s\n' "$rand" >"$ws/.env"
  printf 'notes\n' >"$outside/notes.txt"
}

# ---- cases ------------------------------------------------------------------

case_control_true() {
  crun --profile workspace -- true
  want_exit 0 || return 1
  want_ft none
}

case_workspace_write_intact() {
  crun --profile workspace -- sh -c 'mkdir -p sub && printf "data-%s\n" "$1" >sub/out.txt && cat sub/out.txt' sh "$rand"
  want_exit 0 || return 1
  want_ft none || return 1
  [ "$(cat "$ws/sub/out.txt" 2>/dev/null)" = "data-$rand" ] || { echo "the file written in the workspace is missing or wrong on the host"; return 1; }
  local owner
  owner="$(stat -c %u "$ws/sub/out.txt")"
  [ "$owner" = "$uid" ] || { echo "the file written in the workspace belongs to uid $owner, want $uid"; return 1; }
}

case_write_usr() {
  local f="/usr/cordon-escape-$rand"
  crun --profile workspace -- sh -c "echo pwned > $f"
  want_exit "$sh_redir_fail" || return 1
  want_denied "$f" || return 1
  want_absent "$f"
}

case_write_etc() {
  local f="/etc/cordon-escape-$rand" h
  h="$(sha /etc/hostname)"
  crun --profile workspace -- sh -c "echo pwned > $f"
  want_exit "$sh_redir_fail" || return 1
  want_denied "$f" || return 1
  want_absent "$f" || return 1
  crun --profile workspace -- sh -c 'echo pwned >> /etc/hostname'
  want_denied /etc/hostname || return 1
  want_hash /etc/hostname "$h"
}

case_write_root() {
  local f="/cordon-escape-$rand"
  crun --profile workspace -- sh -c "echo pwned > $f"
  want_denied "$f" || return 1
  want_absent "$f"
}

case_write_unmounted_dir() {
  # $outside exists on the host; no mount shows it in the sandbox.
  local h
  h="$(sha "$outside/notes.txt")"
  crun --profile workspace -- sh -c "echo pwned >> $outside/notes.txt"
  want_denied "$outside/notes.txt" || return 1
  want_hash "$outside/notes.txt" "$h" || return 1
  crun --profile workspace -- touch "$outside/new.txt"
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked "$outside/new.txt" "$outside" || return 1
  want_absent "$outside/new.txt"
}

case_symlink_to_etc() {
  local f="/etc/cordon-escape-link-$rand"
  ln -s "$f" "$ws/to-etc"
  crun --profile workspace -- sh -c 'echo pwned > to-etc'
  want_denied "$ws/to-etc" "$f" || return 1
  want_absent "$f"
}

case_symlink_to_outside() {
  local h
  h="$(sha "$outside/notes.txt")"
  ln -s "$outside/notes.txt" "$ws/to-notes"
  ln -s "$outside" "$ws/to-outside"
  crun --profile workspace -- sh -c 'echo pwned >> to-notes'
  want_denied "$ws/to-notes" "$outside/notes.txt" || return 1
  want_hash "$outside/notes.txt" "$h" || return 1
  crun --profile workspace -- cp /etc/hostname to-outside/new.txt
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked "$ws/to-outside/new.txt" "$outside/new.txt" "$ws/to-outside" "$outside" || return 1
  want_absent "$outside/new.txt"
}

case_protect_missing_hooks() {
  # .git/hooks is on the default protect list and missing at start.
  [ ! -e "$ws/.git/hooks" ] || { echo "fixture: .git/hooks exists"; return 1; }
  crun --profile workspace -- sh -c 'mkdir -p .git/hooks && printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit'
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked_under "$ws/.git/hooks" || return 1
  want_absent "$ws/.git/hooks/pre-commit" || return 1
  # The broker refused the hook: the command's own empty hooks directory
  # (git's templates make one) is all there is, and it goes.
  [ -z "$(ls -A "$ws/.git/hooks" 2>/dev/null)" ] || { echo "$ws/.git/hooks is not empty"; return 1; }
  rm -rf "$ws/.git/hooks"
}

case_protect_existing_config() {
  local h
  h="$(sha "$ws/.git/config")"
  crun --profile workspace -- sh -c 'printf "[core]\n\thooksPath = /tmp\n" >> .git/config'
  want_denied "$ws/.git/config" || return 1
  want_hash "$ws/.git/config" "$h" || return 1
  crun --profile workspace -- sh -c 'rm -f .git/config'
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked "$ws/.git/config" || return 1
  want_hash "$ws/.git/config" "$h"
}

case_rename_protected_parent() {
  # Renaming the parent of protected paths away, then recreating them, must
  # not give a writable .git/hooks or .git/config.
  local h
  h="$(sha "$ws/.git/config")"
  crun --profile workspace -- sh -c 'mv .git .git-moved && mkdir -p .git/hooks && printf "#!/bin/sh\n" > .git/hooks/pre-commit && printf "[core]\n" > .git/config'
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked_under "$ws/.git" || return 1
  want_absent "$ws/.git-moved" || return 1
  want_absent "$ws/.git/hooks/pre-commit" || return 1
  want_hash "$ws/.git/config" "$h"
}

case_deny_read_env() {
  local h
  h="$(sha "$ws/.env")"
  cat >"$d/cordon.yaml" <<EOF
sandbox:
  root: $ws
  deny: [.env]
EOF
  crun --config "$d/cordon.yaml" -- cat .env
  want_out_lacks "SECRET-$rand" || return 1
  # A deny path is masked: reading it either fails, typed as a denial of
  # the path, or gives nothing.
  if [ "$RC" -ne 0 ]; then
    want_denied "$ws/.env" || return 1
  else
    want_ft none || return 1
    [ ! -s "$d/out" ] || { echo "reading the denied .env printed something"; return 1; }
  fi
  crun --config "$d/cordon.yaml" -- sh -c 'echo pwned > .env'
  want_hash "$ws/.env" "$h"
}

case_read_shadow() {
  crun --profile workspace -- cat /etc/shadow /etc/gshadow
  want_out_lacks "root:" || return 1
  if [ "$RC" -ne 0 ]; then
    want_own_failure || return 1
    want_ft sandbox_denied || return 1
    want_blocked /etc/shadow /etc/gshadow || return 1
  else
    want_ft none || return 1
    [ ! -s "$d/out" ] || { echo "reading the masked /etc/shadow printed something"; return 1; }
  fi
}

case_read_root_home() {
  # /root and the other home directories are not in the sandbox.
  crun --profile workspace -- ls -A /root /home
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked /root /home
}

case_network_loopback() {
  local port_file="$d/port" hits="$d/hits"
  # A host listener on loopback with a bounded lifetime; it records every
  # connection it gets.
  timeout 60 python3 -c '
import http.server, socketserver, sys
hits, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        open(hits, "a").write("hit\n")
        self.send_response(200); self.end_headers(); self.wfile.write(b"reached")
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file + ".tmp", "w").write(str(srv.server_address[1]))
__import__("os").rename(port_file + ".tmp", port_file)
srv.serve_forever()
' "$hits" "$port_file" &
  bg_pids+=($!)
  local i
  for ((i = 0; i < 100; i++)); do [ -s "$port_file" ] && break; sleep 0.1; done
  local port
  port="$(cat "$port_file" 2>/dev/null)" || { echo "the host listener did not start"; return 1; }
  crun --profile workspace -- /usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/', timeout=5).read())"
  want_own_failure || return 1
  want_out_lacks reached || return 1
  # Loopback inside is the sandbox's own, so the connection is refused: a
  # failure the disabled network explains.
  want_ft sandbox_denied process_error || return 1
  [ ! -s "$hits" ] || { echo "the host listener got a connection from the sandbox"; return 1; }
  # Control: the listener was reachable from the host all along.
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/', timeout=5).read()" 2>/dev/null ||
    { echo "control failed: the host listener is not reachable from the host"; return 1; }
  [ -s "$hits" ] || { echo "control failed: the listener did not record the host's connection"; return 1; }
}

case_network_external() {
  # 192.0.2.1 is TEST-NET-1: nothing answers, but with a network it routes.
  crun --profile workspace -- /usr/bin/python3 -c "import socket; socket.create_connection(('192.0.2.1', 80), timeout=3)"
  want_own_failure || return 1
  want_ft sandbox_denied || return 1
  want_blocked ""
}

case_proc_self_exe() {
  local sh_bin sh_h c_h
  sh_bin="$(readlink -f /bin/sh)"
  sh_h="$(sha "$sh_bin")"
  c_h="$(sha "$CORDON")"
  # Opening for append writes nothing even when it succeeds, so a broken
  # sandbox cannot damage the host binaries here; success is the failure.
  crun --profile workspace -- sh -c 'for e in /proc/self/exe /proc/[0-9]*/exe; do if : 2>/dev/null >>"$e"; then echo "opened $e for writing"; fi; done; : >>/proc/self/exe'
  want_out_lacks "opened" || return 1
  want_own_failure || return 1
  want_ft sandbox_denied process_error || return 1
  # The classic runc escape: the command is a script whose interpreter is
  # /proc/self/exe, so the sandbox's init would execute the runner binary.
  printf '#!/proc/self/exe\n' >"$ws/evil"
  chmod +x "$ws/evil"
  crun --profile workspace -- ./evil
  want_hash "$sh_bin" "$sh_h" || return 1
  want_hash "$CORDON" "$c_h"
}

case_host_pids() {
  local marker="cordon-marker-$rand"
  bash -c "exec -a $marker sleep 120" &
  bg_pids+=($!)
  local i
  for ((i = 0; i < 50; i++)); do [ -n "$(procs_matching "$marker")" ] && break; sleep 0.1; done
  [ -n "$(procs_matching "$marker")" ] || { echo "control failed: the host marker process is not visible on the host"; return 1; }
  crun --profile workspace -- sh -c 'for p in /proc/[0-9]*; do printf "%s " "${p#/proc/}"; tr "\0" " " < "$p/cmdline"; echo; done'
  want_exit 0 || return 1
  want_out_lacks "$marker" || return 1
  local n
  n="$(grep -c . "$d/out" || true)"
  [ "$n" -le 3 ] || { echo "the sandbox sees $n processes: $(head -c 300 "$d/out" | tr '\n' ';')"; return 1; }
}

# cap_attempt CMD: a privileged operation that must fail without capabilities.
# The command exits 3 when the operation fails, so the status is the
# command's own (chroot(1) itself exits 125 on failure, like a set-up error).
cap_attempt() {
  crun --profile workspace -- sh -c "if $1; then echo ESCAPED; else exit 3; fi"
  want_out_lacks ESCAPED || return 1
  want_exit 3 || return 1
  want_ft sandbox_denied process_error
}

case_mount_attempt() {
  cap_attempt 'mount -t tmpfs none /tmp' || return 1
  cap_attempt "mount --bind / $ws/rootview" || return 1
  want_absent "$ws/rootview"
}

case_unshare_attempt() {
  cap_attempt 'unshare -m true' || return 1
  cap_attempt 'unshare -U -r true' || return 1
  cap_attempt 'unshare -n true'
}

case_chroot_attempt() {
  cap_attempt 'chroot / true'
}

case_no_new_privs() {
  crun --profile workspace -- grep -E '^(NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb|Seccomp):' /proc/self/status
  want_exit 0 || return 1
  local want
  for want in 'NoNewPrivs:	1' 'CapInh:	0000000000000000' 'CapPrm:	0000000000000000' 'CapEff:	0000000000000000' \
    'CapBnd:	0000000000000000' 'CapAmb:	0000000000000000' 'Seccomp:	2'; do
    grep -qxF "$want" "$d/out" || { echo "want '$want' in /proc/self/status: $(tr '\n' ' ' <"$d/out")"; return 1; }
  done
  # A setuid binary must not gain root or capabilities. As root, a file of
  # another user with mode 0600 is writable only with CAP_DAC_OVERRIDE.
  printf 'orig\n' >"$ws/others"
  chmod 600 "$ws/others"
  $is_root && chown 65534:65534 "$ws/others"
  local h
  h="$(sha "$ws/others")"
  local tool ran=0
  for tool in su sudo; do
    command -v "$tool" >/dev/null || continue
    ran=1
    if [ "$tool" = su ]; then
      crun --profile workspace -- su root -s /bin/sh -c 'grep CapEff /proc/self/status; echo pwned > others'
    else
      crun --profile workspace -- sudo -n /bin/sh -c 'grep CapEff /proc/self/status; echo pwned > others'
    fi
    want_own_failure || return 1
    want_ft sandbox_denied process_error || return 1
    if grep -q '^CapEff:' "$d/out" && ! grep -qxF 'CapEff:	0000000000000000' "$d/out"; then
      echo "$tool gained capabilities: $(tr '\n' ' ' <"$d/out")"
      return 1
    fi
    want_hash "$ws/others" "$h" || return 1
  done
  [ "$ran" -eq 1 ] || true
}

case_ptrace_host() {
  sleep 120 &
  local victim=$!
  bg_pids+=("$victim")
  crun --profile workspace -- /usr/bin/python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), 0, 0)  # PTRACE_ATTACH
e = ctypes.get_errno()
print("ptrace", r, e)
sys.exit(0 if r == 0 else 3)' "$victim"
  want_exit 3 || return 1
  want_out_lacks "ptrace 0" || return 1
  want_ft process_error sandbox_denied || return 1
  grep -q '^TracerPid:[[:space:]]*0$' "/proc/$victim/status" || { echo "the host process $victim is traced"; return 1; }
  grep -q '^State:[[:space:]]*S' "/proc/$victim/status" || { echo "the host process $victim is not sleeping: $(grep State "/proc/$victim/status")"; return 1; }
}

case_timeout_daemon() {
  local marker="3$RANDOM.$$"
  local t0 t1
  t0="$(date +%s%N)"
  crun --profile workspace --timeout 2s -- sh -c "setsid sh -c 'sleep $marker' </dev/null >/dev/null 2>&1 & (setsid sleep $marker </dev/null >/dev/null 2>&1 &) ; sleep $marker"
  t1="$(date +%s%N)"
  want_exit 124 || return 1
  want_ft timeout || return 1
  local ms=$(((t1 - t0) / 1000000))
  [ "$ms" -lt 10000 ] || { echo "cordon returned after ${ms}ms for a 2s timeout"; return 1; }
  wait_gone "sleep $marker" 3
}

case_fd_leak() {
  # Host descriptors open in cordon's caller must not reach the sandbox.
  exec 7<"$outside/notes.txt" 8>>"$d/leak" 9<"$ws"
  # No pipeline: the shell would hold the pipe's descriptors while ls runs.
  crun --profile workspace -- sh -c 'ls /proc/$$/fd'
  exec 7<&- 8>&- 9<&-
  want_exit 0 || return 1
  want_ft none || return 1
  local got
  got="$(sort -n "$d/out" | tr '\n' ' ')"
  [ "$got" = "0 1 2 " ] || { echo "the sandboxed shell has fds '$got', want '0 1 2 '"; return 1; }
}

# state_dir mirrors cordon's default state directory.
state_dir() {
  if $is_root; then
    echo /run/cordon
  elif [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "$XDG_RUNTIME_DIR" ] && [ "$(stat -c %u "$XDG_RUNTIME_DIR")" = "$uid" ]; then
    echo "$XDG_RUNTIME_DIR/cordon"
  else
    echo "${TMPDIR:-/tmp}/cordon-$uid"
  fi
}

case_sigkill_leftovers() {
  local marker="3$RANDOM.$$" st id="" rec i
  st="$(state_dir)"
  (cd "$ws" && exec "$CORDON" run --profile workspace -- sh -c "touch started; sleep $marker") </dev/null >"$d/out" 2>"$d/err" &
  local cpid=$!
  for ((i = 0; i < 300; i++)); do [ -e "$ws/started" ] && break; sleep 0.1; done
  [ -e "$ws/started" ] || { kill -9 "$cpid" 2>/dev/null; echo "the sandboxed command did not start$(errtail)"; return 1; }
  for rec in "$st"/runs/*/run.json; do
    if python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("pid")==int(sys.argv[2]) else 1)' "$rec" "$cpid" 2>/dev/null; then
      id="$(basename "$(dirname "$rec")")"
    fi
  done
  kill -9 "$cpid"
  wait "$cpid" 2>/dev/null || true
  wait_gone "sleep $marker" 3 || return 1
  [ -n "$id" ] || { echo "cannot find the state of the killed run (pid $cpid) in $st/runs"; return 1; }
  # The next run reaps what the killed one left.
  crun --profile workspace -- true
  want_exit 0 || return 1
  local left=()
  [ -e "$st/runs/$id" ] && left+=("$st/runs/$id")
  [ -e "$st/lc/$id" ] && left+=("$st/lc/$id")
  local c
  for c in /sys/fs/cgroup/*/cordon/"$id" /sys/fs/cgroup/cordon/"$id" /sys/fs/cgroup/unified/cordon/"$id"; do
    [ -e "$c" ] && left+=("$c")
  done
  grep -qF "$id" /proc/self/mountinfo && left+=("a mount in /proc/self/mountinfo")
  [ -e "$ws/.git/hooks" ] && left+=("the placeholder $ws/.git/hooks")
  [ "${#left[@]}" -eq 0 ] || { echo "run $id left behind: ${left[*]}"; return 1; }
}

case_concurrent_runs() {
  local i pids=() rcs=()
  for i in 1 2 3 4 5 6; do
    (cd "$ws" && exec timeout -k 5 60 "$CORDON" run --profile workspace -- sh -c 'echo "$1" > "c$1"; cat "c$1"' sh "$i") \
      </dev/null >"$d/out$i" 2>"$d/err$i" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    rcs[i]=0
    wait "${pids[i]}" || rcs[i]=$?
  done
  for i in 1 2 3 4 5 6; do
    [ "${rcs[i - 1]}" -eq 0 ] || { echo "run $i exited ${rcs[i - 1]}: $(tail -n 2 "$d/err$i" | tr '\n' ' ')"; return 1; }
    [ "$(cat "$ws/c$i")" = "$i" ] && [ "$(cat "$d/out$i")" = "$i" ] || { echo "run $i: wrong data"; return 1; }
  done
}

case_readonly_mount() {
  local src="$base/rosrc" h
  mkdir -p "$src"
  printf 'ro\n' >"$src/existing"
  h="$(sha "$src/existing")"
  crun --profile workspace --mount "$src:$src:ro" -- sh -c "echo pwned >> $src/existing"
  want_denied "$src/existing" || return 1
  want_hash "$src/existing" "$h" || return 1
  crun --profile workspace --mount "$src:$src:ro" -- sh -c "echo pwned > $src/new"
  want_denied "$src/new" || return 1
  want_absent "$src/new"
}

# Root only: a read-only mount whose source has a submount must make the
# submount read-only too.
case_readonly_submount() {
  local src="$base/rosub"
  mkdir -p "$src/sub"
  mount -t tmpfs -o size=1m cordon-escape "$src/sub" || { echo "cannot mount a tmpfs for the fixture"; return 1; }
  host_mounts+=("$src/sub")
  printf 'ro\n' >"$src/sub/existing"
  local h
  h="$(sha "$src/sub/existing")"
  crun --profile workspace --mount "$src:$src:ro" -- sh -c "echo pwned >> $src/sub/existing"
  local r=0
  want_denied "$src/sub/existing" || r=1
  [ "$r" -eq 0 ] && { want_hash "$src/sub/existing" "$h" || r=1; }
  umount "$src/sub" || true
  return "$r"
}

case_pids_limit() {
  if ! $is_root; then
    crun --profile workspace --pids 32 -- true
    want_exit 125 || return 1
    want_ft setup_error
    return
  fi
  crun --profile workspace --pids 32 --timeout 30s -- /usr/bin/python3 -c '
import os, sys, time
n, pids = 0, []
try:
    for _ in range(200):
        p = os.fork()
        if p == 0:
            time.sleep(30)
            os._exit(0)
        pids.append(p)
        n += 1
except OSError as e:
    print("fork failed:", e.strerror)
print("forked", n)
for p in pids:
    os.kill(p, 9)
sys.exit(0 if n < 200 else 3)'
  want_exit 0 || return 1
  local n
  n="$(sed -n 's/^forked //p' "$d/out")"
  [ -n "$n" ] && [ "$n" -lt 32 ] || { echo "the sandbox forked ${n:-?} processes under --pids 32"; return 1; }
}

case_memory_oom() {
  if ! $is_root; then
    crun --profile workspace --memory 32MiB -- true
    want_exit 125 || return 1
    want_ft setup_error
    return
  fi
  crun --profile workspace --memory 32MiB --timeout 30s -- /usr/bin/python3 -c '
b = []
while True:
    b.append(b"x" * (1 << 20))'
  want_exit 137 || return 1
  want_ft oom
}

case_fork_bomb() {
  if ! $is_root; then
    crun --profile workspace --pids 32 -- sh -c ':'
    want_exit 125 || return 1
    want_ft setup_error
    return
  fi
  crun --profile workspace --pids 32 --timeout 3s -- sh -c 'b() { b | b & }; b; sleep 30'
  # The bomb is contained by the pids limit and ended by the timeout.
  want_exit 124 || return 1
  want_ft timeout
}

# ---- issue 9: report and log paths, trust of output, aliases, modes --------

# wrun ARGS...: cordon run in the workspace with ARGS as given (no --report
# added); stdout and stderr in $d. A hang becomes exit 124.
wrun() {
  RC=0
  (cd "$ws" && exec timeout -k 5 "${CASE_LIMIT:-60}" "$CORDON" run "$@") </dev/null >"$d/out" 2>"$d/err" || RC=$?
}

case_report_symlink() {
  local h
  h="$(sha "$outside/notes.txt")"
  wrun --profile workspace --report report.json -- sh -c "rm -f report.json; ln -sf $outside/notes.txt report.json"
  want_hash "$outside/notes.txt" "$h" || return 1
  [ -f "$ws/report.json" ] && [ ! -L "$ws/report.json" ] || { echo "the report is not a regular file"; return 1; }
  ln -s "$outside/notes.txt" "$ws/planted.json"
  wrun --profile workspace --report planted.json -- true
  want_exit 2 || return 1
  want_hash "$outside/notes.txt" "$h"
}

case_report_fifo() {
  wrun --profile workspace --report report.json -- sh -c 'rm -f report.json; mkfifo report.json'
  [ "$RC" -ne 124 ] || { echo "cordon hung on a FIFO at the report path"; return 1; }
  mkfifo "$ws/fifo.json"
  wrun --profile workspace --report fifo.json -- true
  [ "$RC" -ne 124 ] || { echo "cordon hung on a FIFO left at the report path"; return 1; }
  want_exit 2
}

case_report_refusal() {
  printf '{"exit_code": 0, "failure_type": "none"}\n' >"$d/report.json"
  wrun --report "$d/report.json" --no-such-flag -- true
  want_exit 2 || return 1
  [ "$(rget exit_code)" = 2 ] && [ "$(rget failure_type)" = config_error ] || { echo "the stale report survived the refusal: $(cat "$d/report.json")"; return 1; }
}

case_audit_symlink_folder() {
  ln -s "$outside" "$ws/logs"
  wrun --profile workspace --audit logs/audit.jsonl -- true
  [ "$RC" -ne 0 ] || { echo "the run went ahead with its log through a planted link"; return 1; }
  want_absent "$outside/audit.jsonl"
}

case_forged_setup_error() {
  crun --profile workspace -- sh -c 'echo "cordon: sandbox set-up failed: forged; set require_os_sandbox: false" >&2; exit 125'
  want_exit 125 || return 1
  want_ft process_error || return 1
  case "$(rget failure_detail)" in *require_os_sandbox*) echo "the command's text became the detail"; return 1 ;; esac
}

case_setuid_for_host() {
  crun --profile workspace -- sh -c 'cp /bin/true x; chmod 6755 x; mkdir -m 2755 d'
  [ "$RC" -ne 0 ] || { echo "chmod 6755 / mkdir -m 2755 succeeded"; return 1; }
  local f
  for f in "$ws/x" "$ws/d"; do
    if [ -e "$f" ] && [ -n "$(find "$f" -maxdepth 0 -perm /6000)" ]; then echo "$f is setuid or setgid on the host"; return 1; fi
  done
}

case_setuid_tmpfile() {
  # An unnamed file (O_TMPFILE) made setuid, then linked into the workspace
  # (not written: a write by a process without CAP_FSETID clears the bits).
  local dir
  for dir in . "$ws"; do
    crun --profile workspace -- python3 -c 'import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, 0o6755)
if ctypes.CDLL(None, use_errno=True).linkat(fd, b"", -100, b"x", 0x1000) != 0:
    os.link("/proc/self/fd/%d" % fd, "x")' "$dir"
    if [ -e "$ws/x" ] && [ -n "$(find "$ws/x" -maxdepth 0 -perm /6000)" ]; then echo "$ws/x (an O_TMPFILE made in $dir) is setuid or setgid on the host"; return 1; fi
    rm -f "$ws/x"
  done
}

case_write_shadow() {
  crun --profile workspace -- sh -c 'echo x > /etc/shadow'
  want_own_failure || return 1
  want_ft sandbox_denied
}

case_alias_mount() {
  local h
  h="$(sha "$ws/.git/config")"
  cat >"$d/cordon.yaml" <<EOF
sandbox:
  root: $ws
  deny: [.env]
  mounts: [{source: $ws, target: /alias}]
EOF
  crun --config "$d/cordon.yaml" -- cat /alias/.env
  want_out_lacks "SECRET-$rand" || return 1
  crun --config "$d/cordon.yaml" -- sh -c 'echo "[core] hooksPath = /tmp" >> /alias/.git/config; mkdir -p /alias/.git/hooks; echo pwned > /alias/.git/hooks/pre-commit'
  want_hash "$ws/.git/config" "$h" || return 1
  want_absent "$ws/.git/hooks/pre-commit"
}

case_protect_metadata() {
  # A hook the host keeps non-executable, under a protect pattern (no mount
  # covers a pattern's match): neither chmod by path nor fchmod on a
  # descriptor opened for reading may make it executable or writable by
  # others; with strict_deny, touch may not change its times either (the
  # default mode leaves times to the kernel: docs/performance.md, "The
  # descriptor fast path").
  mkdir -p "$ws/sub/.git/hooks"
  printf '#!/bin/sh\necho pwned\n' >"$ws/sub/.git/hooks/pre-commit"
  chmod 644 "$ws/sub/.git/hooks/pre-commit"
  local st script cfg
  st="$(stat -c '%a %Y' "$ws/sub/.git/hooks/pre-commit")"
  printf 'sandbox:\n  root: %s\n  protect: ["**/.git/hooks"]\n  protect_defaults: false\n' "$ws" >"$d/cordon.yaml"
  printf 'sandbox:\n  root: %s\n  protect: ["**/.git/hooks"]\n  protect_defaults: false\n  strict_deny: true\n' "$ws" >"$d/strict.yaml"
  for script in 'cordon.yaml chmod +x sub/.git/hooks/pre-commit' \
    'cordon.yaml chmod o+w sub/.git/hooks/pre-commit' \
    'cordon.yaml python3 -c "import os; os.fchmod(os.open(\"sub/.git/hooks/pre-commit\", os.O_RDONLY), 0o755)"' \
    'strict.yaml touch -d @1 sub/.git/hooks/pre-commit'; do
    cfg="${script%% *}" script="${script#* }"
    crun --config "$d/$cfg" -- sh -c "$script"
    want_denied "$ws/sub/.git/hooks/pre-commit" || return 1
    [ "$(stat -c '%a %Y' "$ws/sub/.git/hooks/pre-commit")" = "$st" ] || { echo "the hook's mode or times changed: $script"; return 1; }
  done
  rm -rf "$ws/sub"
}

case_bind_protected_socket() {
  # bind(2) of a unix socket creates a file: not under a protected name.
  mkdir -p "$ws/.git/hooks"
  crun --profile workspace -- python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(".git/hooks/pre-commit")'
  want_denied "$ws/.git/hooks/pre-commit" || return 1
  want_absent "$ws/.git/hooks/pre-commit" || return 1
  rm -rf "$ws/.git/hooks"
}

case_git_redirect() {
  # A .git file (or symlink) that points git at a directory the sandbox
  # filled with a hook: refused, with the .git path; the host's git in sub
  # finds no redirect.
  command -v git >/dev/null || { echo "git is not installed"; return 1; }
  # The sandbox cannot make such a directory (case_bare_plant): the host does.
  mkdir -p "$ws/evil/hooks" "$ws/evil/objects" "$ws/evil/refs" "$ws/sub"
  echo "ref: refs/heads/main" >"$ws/evil/HEAD"
  printf '#!/bin/sh\necho pwned\n' >"$ws/evil/hooks/pre-commit"
  chmod +x "$ws/evil/hooks/pre-commit"
  chown -R "$(id -u):$(id -g)" "$ws/evil" "$ws/sub"
  crun --profile workspace -- sh -c 'printf "gitdir: ../evil\n" > sub/.git; cat sub/.git'
  want_denied "$ws/sub/.git" || return 1
  want_absent "$ws/sub/.git" || return 1
  crun --profile workspace -- sh -c 'ln -s ../evil sub/.git'
  want_denied "$ws/sub/.git" || return 1
  want_absent "$ws/sub/.git" || return 1
  rm -rf "$ws/evil" "$ws/sub"
}

case_bare_plant() {
  # A directory git takes for a repository (HEAD, objects, refs), planted
  # in the workspace with a pager command in its config or a hook: the
  # piece that completes it is refused, in either order, and the host's
  # git in it (or below it) runs nothing.
  command -v git >/dev/null || { echo "git is not installed"; return 1; }
  mark="$d/bare-pwned"
  crun --profile workspace -- sh -c "mkdir -p src/pkg src/objects src/refs && printf '[core]\\n\\tpager = touch $mark; cat\\n' > src/config && echo 'ref: refs/heads/main' > src/HEAD"
  want_denied "$ws/src/HEAD" || return 1
  want_absent "$ws/src/HEAD" || return 1
  crun --profile workspace -- sh -c "git init -q --bare b.git && printf '#!/bin/sh\\ntouch $mark\\n' > b.git/hooks/post-update"
  want_denied "$ws/b.git/hooks/post-update" || return 1
  want_absent "$ws/b.git/hooks/post-update" || return 1
  (cd "$ws/src/pkg" && GIT_PAGER= PAGER= script -qc "git log" /dev/null >/dev/null 2>&1)
  (cd "$ws/b.git" && git log >/dev/null 2>&1)
  want_absent "$mark" || return 1
  rm -rf "$ws/src" "$ws/b.git"
}

all_cases=(
  control_true workspace_write_intact
  write_usr write_etc write_root write_unmounted_dir
  symlink_to_etc symlink_to_outside
  protect_missing_hooks protect_existing_config rename_protected_parent deny_read_env
  read_shadow read_root_home
  network_loopback network_external
  proc_self_exe host_pids mount_attempt unshare_attempt chroot_attempt no_new_privs ptrace_host
  timeout_daemon fd_leak sigkill_leftovers concurrent_runs readonly_mount
  pids_limit memory_oom fork_bomb
  report_symlink report_fifo report_refusal audit_symlink_folder forged_setup_error setuid_for_host
  write_shadow alias_mount protect_metadata bind_protected_socket git_redirect bare_plant setuid_tmpfile
)
$is_root && all_cases+=(readonly_submount)

cases=("$@")
[ "${#cases[@]}" -gt 0 ] || cases=("${all_cases[@]}")

pass=0
fail=0
for name in "${cases[@]}"; do
  if ! declare -F "case_$name" >/dev/null; then
    echo "FAIL $name: no such case"
    fail=$((fail + 1))
    continue
  fi
  d="$base/cases/$name"
  mkdir -p "$d"
  reset_ws
  if (trap stop_case_helpers EXIT; "case_$name") >"$d/log" 2>&1; then
    echo "PASS $name"
    pass=$((pass + 1))
  else
    why="$(grep -v '^[[:space:]]*$' "$d/log" | tail -n 1)"
    echo "FAIL $name: ${why:-failed without a reason}"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
