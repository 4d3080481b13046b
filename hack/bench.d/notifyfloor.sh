#!/usr/bin/env bash
# hack/bench.d/notifyfloor.sh [RUNS]: the floor under any seccomp
# user-notification broker, for issue 10's create-heavy goal (at most 15%
# above a run without the broker). It times the create-heavy cases of
# hack/bench.d/broker.sh (untar 10,000 small files; git clone of a local
# repository of 5,000 files, each into a new directory) run plainly and
# under notifyfloor (notifyfloor.c): a filter that notifies exactly the
# calls cordon's broker takes, and a listener that answers each at once
# with SECCOMP_USER_NOTIF_FLAG_CONTINUE, doing no work. Both under the same
# launcher (-n: a filter that notifies nothing), alternating, no sandbox;
# and "creates only" (-c): only the calls that make a name are notified,
# one round trip per file, the least a broker that decides creates can make.
# Prints the median wall times (RUNS, default 7), the ratio and the
# notifications per run. TMPDIR=DIR puts the work in DIR (a tmpfs there
# keeps the file system's own costs out of the way).
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
n="${1:-7}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-notifyfloor.XXXXXX")"
trap 'rm -rf --one-file-system "$tmp"' EXIT
cc -O2 -Wall -pthread -o "$tmp/notifyfloor" hack/bench.d/notifyfloor.c
fix="$tmp/fix"
mkdir -p "$fix/tree" "$tmp/work"
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
git init -q "$fix/repo"
for d in $(seq 0 49); do
  mkdir -p "$fix/repo/d$d"
  for f in $(seq 0 99); do echo "$d $f" >"$fix/repo/d$d/f$f"; done
done
git -C "$fix/repo" add -A
git -C "$fix/repo" -c user.name=b -c user.email=b@b commit -q -m fixture
declare -A cmd=(
  [untar]='mkdir u.$RUN && tar xf '"$fix"'/small.tar -C u.$RUN'
  [git-clone]='git clone -q '"$fix"'/repo c.$RUN'
)
now() { date +%s%N; }
declare -A times notes
for c in untar git-clone; do
  for i in $(seq 1 "$n"); do
    for which in plain floor creates; do
      flag=()
      [ "$which" = plain ] && flag=(-n)
      [ "$which" = creates ] && flag=(-c)
      line=${cmd[$c]//\$RUN/$i.$which}
      t0=$(now)
      (cd "$tmp/work" && "$tmp/notifyfloor" "${flag[@]}" sh -c "$line") 2>"$tmp/err" >/dev/null
      t1=$(now)
      times[$c.$which]+="$(((t1 - t0) / 1000000)) "
      [ "$which" != plain ] && notes[$c.$which]="$(grep -o '[0-9]* notifications' "$tmp/err")"
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| case | plain ms (median of %d) | floor ms (calls) | floor/plain | creates only ms (calls) | creates only/plain |\n|---|---|---|---|---|---|\n' "$n"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
for c in untar git-clone; do
  p=$(echo "${times[$c.plain]}" | median)
  f=$(echo "${times[$c.floor]}" | median)
  o=$(echo "${times[$c.creates]}" | median)
  printf '| %s | %s | %s (%s) | %s | %s (%s) | %s |\n' "$c" "$p" "$f" "${notes[$c.floor]% notifications}" "$(ratio "$f" "$p")" \
    "$o" "${notes[$c.creates]% notifications}" "$(ratio "$o" "$p")"
done
