#!/usr/bin/env bash
# hack/bench.d/oci.sh: `podman run --rm IMAGE true` with cordon-oci as the
# runtime against the same with runc, alternating run by run in one pass
# (issue 25's goal: cordon-oci at most 1.2x runc), and cordon-oci with
# run.cordon.network.allow against cordon-oci without (the goal: at most
# 3 ms slower: the supervisor and the network guard's device; an allow
# list alone has no broker, so no filter of its own). The image is a static
# busybox imported into a podman storage of the bench's own (vfs, no
# network), so nothing is fetched and nothing is shared.
#
#   bash hack/bench.d/oci.sh [CORDON_BIN] [RUNS]     (root; default 40 runs)
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
cordon="$(realpath "${1:-bin/cordon}")" # the link must name it from anywhere
n="${2:-${N:-40}}"
if [ "$(id -u)" -ne 0 ]; then echo "hack/bench.d/oci.sh: run it as root (runc and podman's cgroups); skipped" >&2; exit 0; fi
for t in podman runc busybox; do
  command -v "$t" >/dev/null || { echo "hack/bench.d/oci.sh: $t is missing (make deps); skipped" >&2; exit 0; }
done
tmp="$(mktemp -d /tmp/cordon-oci-bench.XXXXXX)"
ln -s "$cordon" "$tmp/cordon-oci"
pm=(podman --root "$tmp/storage" --runroot "$tmp/run" --tmpdir "$tmp/tmp" --storage-driver vfs --events-backend none --cgroup-manager cgroupfs)
trap '"${pm[@]}" rm -af -t0 >/dev/null 2>&1 || true; rm -rf --one-file-system "$tmp"' EXIT
mkdir -p "$tmp/rootfs/bin"
cp "$(command -v busybox)" "$tmp/rootfs/bin/busybox"
ln -s busybox "$tmp/rootfs/bin/true"
tar -C "$tmp/rootfs" -cf "$tmp/rootfs.tar" .
"${pm[@]}" import "$tmp/rootfs.tar" localhost/cordon-oci-bench:1 >/dev/null 2>&1
flags=(run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=20000:20000)
args=("${flags[@]}" localhost/cordon-oci-bench:1 /bin/true)
allow=("${flags[@]}" --annotation run.cordon.network.allow=example.com:443 localhost/cordon-oci-bench:1 /bin/true)

# one RUNTIME [allow]: the wall time of one podman run, in microseconds.
one() {
  local s e a=("${args[@]}")
  [ "${2:-}" = allow ] && a=("${allow[@]}")
  s=$(date +%s%N)
  "${pm[@]}" --runtime "$1" "${a[@]}" >/dev/null
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2)}'; }

one "$tmp/cordon-oci" >/dev/null; one "$tmp/cordon-oci" allow >/dev/null; one "$(command -v runc)" >/dev/null # warm the page cache
: >"$tmp/cordon.us"; : >"$tmp/allow.us"; : >"$tmp/runc.us"; : >"$tmp/diff.us"
# Each round runs the three side by side, the pair with and without the
# allow list in alternating order, so that the allow list's cost is the
# difference of two runs made next to each other (the machine's load
# drifts over a pass far more than 3 ms): its median over the rounds, with
# its quartiles, not the difference of two medians of ~250 ms runs.
for i in $(seq "$n"); do
  if [ $((i % 2)) -eq 1 ]; then
    c1=$(one "$tmp/cordon-oci"); a1=$(one "$tmp/cordon-oci" allow)
  else
    a1=$(one "$tmp/cordon-oci" allow); c1=$(one "$tmp/cordon-oci")
  fi
  echo "$c1" >>"$tmp/cordon.us"; echo "$a1" >>"$tmp/allow.us"; echo $((a1 - c1)) >>"$tmp/diff.us"
  one "$(command -v runc)" >>"$tmp/runc.us"
done
c=$(median <"$tmp/cordon.us"); a=$(median <"$tmp/allow.us"); r=$(median <"$tmp/runc.us")
ms() { awk -v v="$1" 'BEGIN{printf "%.1f", v/1000}'; }
# q FILE P: the P-th percentile (nearest rank) of the numbers in FILE.
q() { sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int(p*NR/100+0.999); if (i<1) i=1; print a[i]}'; }
echo "podman run --rm IMAGE true, $n runs each, alternating (median wall time):"
echo "| runtime | median ms | min ms |"
echo "|---|---|---|"
echo "| cordon-oci | $(ms "$c") | $(ms "$(q "$tmp/cordon.us" 0)") |"
echo "| cordon-oci, run.cordon.network.allow | $(ms "$a") | $(ms "$(q "$tmp/allow.us" 0)") |"
echo "| runc $(runc --version | head -n1 | awk '{print $3}') | $(ms "$r") | $(ms "$(q "$tmp/runc.us" 0)") |"
echo "cordon-oci/runc: $(awk -v c="$c" -v r="$r" 'BEGIN{printf "%.2f", c/r}') (goal: at most 1.2)"
d=$(median <"$tmp/diff.us")
echo "allow list - none, median of $n paired differences: $(awk -v v="$d" 'BEGIN{printf "%+.1f", v/1000}') ms" \
  "(quartiles $(awk -v v="$(q "$tmp/diff.us" 25)" 'BEGIN{printf "%+.1f", v/1000}') to $(awk -v v="$(q "$tmp/diff.us" 75)" 'BEGIN{printf "%+.1f", v/1000}') ms," \
  "difference of the medians $(awk -v a="$a" -v c="$c" 'BEGIN{printf "%+.1f", (a-c)/1000}') ms; goal: at most 3 ms)"
