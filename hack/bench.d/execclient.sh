#!/usr/bin/env bash
# hack/bench.d/execclient.sh BASE NEW [RUNS]: what `cordon exec`'s client
# costs, the cordon binary BASE against NEW, interleaved (hack/benchcmp) on
# one warm session of hack/bench's sandbox that NEW starts, so the server
# side is the same for both: `cordon exec N -- true` and
# `sh -c 'echo x > f && cat f'` through each binary, next to the commands
# with no sandbox. Prints the table (median, p90, min, CPU of the client)
# and NEW/BASE; RUNS defaults to 200. Run it under the bench lock:
#   flock /work/bench.lock bash hack/bench.d/execclient.sh OLD bin/cordon
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
base="$(realpath "$1")" new="$(realpath "$2")" n="${3:-200}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-execclient.XXXXXX")"
sess="execclient-$$"
trap '"$new" session stop "$sess" >/dev/null 2>&1 || true; rm -rf --one-file-system "$tmp"' EXIT
work="$tmp/work"
mkdir -p "$work"
cp testdata/bench/bench.yaml "$tmp/bench.yaml"
go build -o "$tmp/benchcmp" ./hack/benchcmp
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
(cd "$work" && "$new" session start --config "$tmp/bench.yaml" --name "$sess" >/dev/null)
wr='echo x > f && cat f'
add() {
  local IFS=$'\t'
  printf '%s\n' "$*" >>"$tmp/cases.tsv"
}
for who in base new; do
  bin=$base
  [ "$who" = new ] && bin=$new
  add "$who" true - "$work" "$bin" exec "$sess" -- true
  add "$who" "sh -c '$wr'" 'x\n' "$work" "$bin" exec "$sess" -- sh -c "$wr"
done
add "no sandbox" true - "$work" true
add "no sandbox" "sh -c '$wr'" 'x\n' "$work" sh -c "$wr"
echo "hack/bench.d/execclient.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $n runs of each, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "base: $base"
echo "new:  $new"
echo
"$tmp/benchcmp" -cases "$tmp/cases.tsv" -n "$n" -warmup 10 -ref new
