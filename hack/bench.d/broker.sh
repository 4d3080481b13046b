#!/usr/bin/env bash
# hack/bench.d/broker.sh BASE NEW [RUNS]: what cordon's seccomp-notify
# broker costs, side by side in one run: the cordon binary BASE (built from a
# commit before the broker) against NEW, alternating, on the same sandbox
# (the default workspace profile's protect list, patterns included, the
# fixtures mounted read-only at /fix). Cases:
#   true       cordon run -- true (cold)
#   read-tree  find and cat a 10,000-file tree
#   py-import  a Python import of pygments' lexers, yaml, email, asyncio, ...
#   untar      untar 10,000 small files (into a new directory each run)
#   git-clone  git clone of a local repository of 5,000 files (likewise)
# What the create cases made is removed after all runs, untimed: ext4
# allocates inodes slowly for a while after many were deleted
# (recently_deleted), so an rm -rf timed inside each run, or between runs,
# made every later run pay for the one before, whichever binary it was.
# RM=1 times an rm -rf of the tree after each untar instead (brokered
# unlinks), as this script did before. TMPDIR=DIR puts the workspace in DIR:
# a tmpfs there shows the broker's cost with no file system in the way.
#   npm-ci     npm ci --offline of a lock file that names npm's own tarball
#              (npm pack of the host's npm with its bundled dependencies:
#              about 1,900 files), from a warm cache in the workspace (NPM=1,
#              where npm is installed; the cache is filled once, untimed)
#   go-build   go build of a small program with a cold build cache (GO=1;
#              -buildvcs=false: the base's placeholder .git directory in the
#              workspace makes go build fail on VCS stamping otherwise)
# Prints the median wall time of each (RUNS, default 5) and NEW/BASE, and the
# median CPU time (user + system of every process of the run, from
# /usr/bin/time; for bwrap, whose monitor does not wait for the sandbox,
# the command's own, timed inside): on a loaded machine the wall time of a
# round trip is mostly waiting for a CPU, which the CPU time leaves out.
# Every case but true also runs its command under hack/bench.d/timeit (the
# same binary in both sandboxes, at /fix/.timeit), which takes
# CLOCK_MONOTONIC before and after the work, inside the sandbox: the last
# columns are the work alone, without the sandbox's start and teardown
# (cordon's cold start is about 30 ms more than bwrap's, and hides a
# difference in the work itself), wall and CPU (user + system of the
# command and its descendants: not the broker's, which runs outside), and
# their ratios.
# CASES="untar true" picks cases. STRICT_NEW=1 runs NEW with strict_deny: true
# (pass the same binary twice to compare strict_deny with the default).
# DENY='["**/.env", "/fix/**/*.pem"]' gives both sandboxes that deny list
# (what the deny watcher walks and watches).
#   creat-loop one Python process creating 10,000 empty files: one brokered
#              call each, for the cost per call (see below)
# BASE may be the word bwrap: the base is then bubblewrap with the same bind
# layout (the system directories, /fix and Go read-only, the workspace
# read-write, private namespaces, no capability), and the table adds, for
# creat-loop, the cost per brokered call ((NEW - bwrap) / 10,000) beside the
# floor's: the same loop under hack/bench.d/notifyfloor -c (a listener that
# does nothing) against -n, no sandbox, alternating in the same run, and
# under notifyfloor -c -a -k (a listener that answers each create as cordon
# does, installing a descriptor, with a CPU kept awake: internal/awake).
# hack/bench runs it when BROKER_BASE names the base binary.
set -Eeuo pipefail
base="$1" new="$(realpath "$2")" n="${3:-5}"
[ "$base" = bwrap ] || base="$(realpath "$base")"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-brokerbench.XXXXXX")"
trap 'rm -rf --one-file-system "$tmp"' EXIT
fix="$tmp/fix" work="$tmp/work"
mkdir -p "$fix/tree" "$work"
python3 - "$fix/tree" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(100):
    p = os.path.join(root, "d%03d" % d)
    os.makedirs(p, exist_ok=True)
    for f in range(100):
        with open(os.path.join(p, "f%03d.txt" % f), "w") as fh:
            fh.write("line %d %d\n" % (d, f) * 8)
PY
tar cf "$fix/small.tar" -C "$fix" tree
cc -O2 -Wall -static -o "$fix/.timeit" "$(dirname "$0")/timeit.c" 2>/dev/null || cc -O2 -Wall -o "$fix/.timeit" "$(dirname "$0")/timeit.c"
git init -q "$fix/repo"
for d in $(seq 0 49); do
  mkdir -p "$fix/repo/d$d"
  for f in $(seq 0 99); do echo "$d $f" >"$fix/repo/d$d/f$f"; done
done
git -C "$fix/repo" add -A
git -C "$fix/repo" -c user.name=b -c user.email=b@b commit -q -m fixture
mkdir -p "$fix/gomod"
printf 'module bench\n\ngo 1.21\n' >"$fix/gomod/go.mod"
printf 'package main\n\nimport (\n\t"encoding/json"\n\t"fmt"\n\t"net/url"\n)\n\nfunc main() {\n\tb, _ := json.Marshal(url.Values{"a": {"b"}})\n\tfmt.Println(string(b))\n}\n' >"$fix/gomod/main.go"
goroot="$(go env GOROOT 2>/dev/null || echo /usr/local/go)"
if [ "${NPM:-0}" = 1 ]; then
  npmdir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
  mkdir -p "$fix/npm"
  (cd "$fix/npm" && npm pack --silent --ignore-scripts "$npmdir" >/dev/null && tgz="$(ls npm-*.tgz)" &&
    printf '{"name":"bench","version":"1.0.0","dependencies":{"npm":"file:%s"}}\n' "$tgz" >package.json &&
    npm install --offline --no-audit --no-fund --loglevel=error --cache "$work/npmcache" >/dev/null && rm -rf node_modules)
fi
cat >"$tmp/cfg.yaml" <<YAML
sandbox:
  root: ./work
  mounts:
    - {source: $fix, target: /fix, readonly: true}
    - {source: $goroot, readonly: true}
  env:
    pass: [PATH]
    set: {HOME: $work, GOCACHE: $work/gocache, GOPATH: $work/gopath, GOFLAGS: -mod=mod -buildvcs=false, GOTOOLCHAIN: local}
YAML
[ -n "${DENY:-}" ] && sed -i "s|^  root: ./work\$|  root: ./work\n  deny: $DENY|" "$tmp/cfg.yaml"
cp "$tmp/cfg.yaml" "$tmp/cfg-new.yaml"
[ "${STRICT_NEW:-0}" = 1 ] && sed -i 's/^  root: .\/work$/  root: .\/work\n  strict_deny: true/' "$tmp/cfg-new.yaml"
export PATH="$goroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
bw=(bwrap)
for d in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc; do
  [ -e "$d" ] && [ ! -L "$d" ] && bw+=(--ro-bind "$d" "$d")
  [ -L "$d" ] && bw+=(--symlink "$(readlink "$d")" "$d")
done
bw+=(--proc /proc --dev /dev --tmpfs /tmp --ro-bind "$fix" /fix --ro-bind "$goroot" "$goroot" --bind "$work" "$work"
  --chdir "$work" --unshare-all --die-with-parent --new-session --clearenv --setenv PATH "$PATH" --setenv HOME "$work"
  --setenv GOCACHE "$work/gocache" --setenv GOPATH "$work/gopath" --setenv GOFLAGS "-mod=mod -buildvcs=false" --setenv GOTOOLCHAIN local)
[ "$(id -u)" = 0 ] && bw+=(--cap-drop ALL)
declare -A cmd=(
  [true]="true"
  [read-tree]="find /fix/tree -type f | xargs cat | wc -c"
  [py-import]="/usr/bin/python3 -c 'import pygments.lexers, pygments.formatters, yaml, email.mime.multipart, http.client, asyncio, unittest, json, xml.etree.ElementTree'"
  [untar]='mkdir u.$RUN && tar xf /fix/small.tar -C u.$RUN'
  [git-clone]='git clone -q /fix/repo c.$RUN'
  [creat-loop]="mkdir p.\$RUN && /usr/bin/python3 -c 'import os
for i in range(10000): os.close(os.open(\"p.\$RUN/%d\" % i, os.O_CREAT | os.O_WRONLY, 0o644))'"
  [go-build]="rm -rf gocache b && cp -r /fix/gomod b && cd b && go build -o /dev/null . && cd .. && rm -rf b"
  [npm-ci]='mkdir n.$RUN && cp /fix/npm/* n.$RUN/ && cd n.$RUN && npm ci --offline --no-audit --no-fund --loglevel=error --cache '"$work/npmcache"
)
read -ra cases <<<"${CASES:-true read-tree py-import untar git-clone creat-loop}"
[ "$base" = bwrap ] && [[ " ${cases[*]} " == *" creat-loop "* ]] && cc -O2 -Wall -pthread -o "$tmp/notifyfloor" "$(dirname "$0")/notifyfloor.c"
[ "${GO:-0}" = 1 ] && cases+=(go-build)
[ "${NPM:-0}" = 1 ] && cases+=(npm-ci)
now() { date +%s%N; }
load="$(cut -d' ' -f1-3 /proc/loadavg)"
declare -A times cpu itimes icpu
for c in "${cases[@]}"; do
  for i in $(seq 1 "$n"); do
    for which in base new; do
      bin="$base" cfg="$tmp/cfg.yaml"
      [ "$which" = new ] && bin="$new" cfg="$tmp/cfg-new.yaml"
      if [ "$c" = true ]; then
        if [ "$bin" = bwrap ]; then
          t0=$(now); (cd "$work" && "${bw[@]}" -- /usr/bin/time -f "%U %S" -o "$work/.cpu" true) >/dev/null; t1=$(now)
          mv "$work/.cpu" "$tmp/cpu"
        else
          t0=$(now); (cd "$work" && /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$bin" run --config "$cfg" -- true) >/dev/null; t1=$(now)
        fi
      else
        line=${cmd[$c]//\$RUN/$i.$which}
        if [ "${RM:-0}" = 1 ]; then
          case $c in untar) line="$line && rm -rf u.$i.$which" ;; git-clone) line="$line && rm -rf c.$i.$which" ;; esac
        fi
        if [ "$bin" = bwrap ]; then
          t0=$(now); (cd "$work" && "${bw[@]}" -- /usr/bin/time -f "%U %S" -o "$work/.cpu" /fix/.timeit sh -c "$line") >/dev/null 2>"$tmp/err"; t1=$(now)
          mv "$work/.cpu" "$tmp/cpu"
        else
          t0=$(now); (cd "$work" && /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$bin" run --config "$cfg" -- /fix/.timeit sh -c "$line") >/dev/null 2>"$tmp/err"; t1=$(now)
        fi
        grep -v '^cordon-bench-inner: ' "$tmp/err" >&2 || true
        inner="$(sed -n 's/^cordon-bench-inner: //p' "$tmp/err" | tail -1)"
        [ -n "$inner" ] || { echo "broker.sh: $c ($which) printed no in-sandbox time" >&2; exit 1; }
        itimes[$c.$which]+="$(awk -v v="${inner% *}" 'BEGIN {printf "%.1f", v / 1e6}') "
        icpu[$c.$which]+="$(( ${inner#* } / 1000 )) "
      fi
      times[$c.$which]+="$(( (t1 - t0) / 1000000 )) "
      cpu[$c.$which]+="$(awk '{printf "%d", ($1 + $2) * 1000}' "$tmp/cpu") "
    done
    if [ "$c" = creat-loop ] && [ "$base" = bwrap ]; then
      for which in plain floor inst; do
        flag=(-n)
        [ "$which" = floor ] && flag=(-c)
        [ "$which" = inst ] && flag=(-c -a -k)
        line=${cmd[$c]//\$RUN/$i.$which}
        t0=$(now); (cd "$work" && /usr/bin/time -f "%U %S" -o "$tmp/cpu" "$tmp/notifyfloor" "${flag[@]}" sh -c "$line") >/dev/null 2>&1; t1=$(now)
        times[$c.$which]+="$(( (t1 - t0) / 1000000 )) "
        cpu[$c.$which]+="$(awk '{printf "%d", ($1 + $2) * 1000}' "$tmp/cpu") "
      done
    fi
  done
done
rm -rf --one-file-system "$work"/u.* "$work"/c.* "$work"/p.* "$work"/n.*
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "- $(nproc) CPUs, load average before the run: $load; file system of the workspace: $(stat -f -c %T "$work")"
label=base
[ "$base" = bwrap ] && label=bwrap
printf '| case | %s ms (median of %d) | cordon ms | cordon/%s | %s CPU ms | cordon CPU ms | CPU ratio | in-sandbox %s ms | in-sandbox cordon ms | in-sandbox ratio | in-sandbox CPU ms %s / cordon | in-sandbox CPU ratio |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n' "$label" "$n" "$label" "$label" "$label" "$label"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0 ? a/b : 0)}'; }
for c in "${cases[@]}"; do
  b=$(echo "${times[$c.base]}" | median)
  w=$(echo "${times[$c.new]}" | median)
  bc=$(echo "${cpu[$c.base]}" | median)
  wc=$(echo "${cpu[$c.new]}" | median)
  ib=- iw=- ir=- icb=- icw=- icr=-
  if [ -n "${itimes[$c.base]:-}" ]; then
    ib=$(echo "${itimes[$c.base]}" | median) iw=$(echo "${itimes[$c.new]}" | median)
    icb=$(echo "${icpu[$c.base]}" | median) icw=$(echo "${icpu[$c.new]}" | median)
    ir=$(ratio "$iw" "$ib") icr=$(ratio "$icw" "$icb")
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |\n' "$c" "$b" "$w" "$(ratio "$w" "$b")" \
    "$bc" "$wc" "$(ratio "$wc" "$bc")" "$ib" "$iw" "$ir" "$icb" "$icw" "$icr"
done
if [ -n "${times[creat-loop.floor]:-}" ]; then
  b=$(echo "${times[creat-loop.base]}" | median) w=$(echo "${times[creat-loop.new]}" | median)
  p=$(echo "${times[creat-loop.plain]}" | median) f=$(echo "${times[creat-loop.floor]}" | median)
  awk -v b="$b" -v w="$w" -v p="$p" -v f="$f" 'BEGIN {
    c = (w - b) * 1000 / 10000; fl = (f - p) * 1000 / 10000
    printf "\nper brokered call (creat-loop, 10,000 creates), wall: cordon %.1f us over bwrap; do-nothing listener %.1f us over none (%d vs %d ms); ratio %.2f\n", c, fl, f, p, (fl > 0 ? c / fl : 0) }'
  in=$(echo "${times[creat-loop.inst]}" | median)
  awk -v p="$p" -v i="$in" 'BEGIN { printf "a listener that answers each create as cordon does, installing a descriptor, with a keeper (notifyfloor -c -a -k): %.1f us over none (%d ms)\n", (i - p) * 1000 / 10000, i }'
  b=$(echo "${cpu[creat-loop.base]}" | median) w=$(echo "${cpu[creat-loop.new]}" | median)
  p=$(echo "${cpu[creat-loop.plain]}" | median) f=$(echo "${cpu[creat-loop.floor]}" | median)
  # cordon's own start-up (its `true` case) is not the broker's.
  st=0
  [ -n "${cpu[true.new]:-}" ] && st=$(( $(echo "${cpu[true.new]}" | median) - $(echo "${cpu[true.base]}" | median) ))
  awk -v b="$b" -v w="$w" -v p="$p" -v f="$f" -v st="$st" 'BEGIN {
    c = (w - st - b) * 1000 / 10000; fl = (f - p) * 1000 / 10000
    printf "per brokered call, CPU (user + system; cordon less its start-up, %d ms): cordon %.1f us over bwrap; do-nothing listener %.1f us over none; ratio %.2f\n", st, c, fl, (fl > 0 ? c / fl : 0) }'
fi
