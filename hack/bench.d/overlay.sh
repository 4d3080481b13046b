#!/usr/bin/env bash
# hack/bench.d/overlay.sh [CORDON]: copy-on-write overlays (issue 26), one
# run each, beside bubblewrap on the same layout (the host /usr, /bin,
# /sbin, /lib* and /etc read-only, the work directory read-write):
#   untar      untar 10,000 small files: bwrap into the work directory (a
#              plain bind), bwrap into an overlayfs of it that this script
#              mounts on the host with cordon's options (root only: the
#              same kernel work as cordon's), and cordon run --overlay into
#              a fresh overlay of it
#   git-clone  git clone of a local repository of 5,000 files (likewise)
#   diff       cordon diff of the untar overlay (10,000 added files)
#   apply      cordon apply of it, beside cp -a of the same tree
# Goals: untar and git-clone ≤ 1.3x bwrap, diff ≤ 1 s, apply ≤ 2x cp -a.
# Each run is timed whole (the runner's start and end included) and
# inside the sandbox (the same `date` wrapper around the work in each):
# the difference is the runner's own cost, cordon's cold start mostly.
# Each case alternates the sides ROUNDS times (default 5) and reports the
# medians beside every run and the load: the machine may be busy.
# The overlays live in a private store (CORDON_OVERLAY_DIR) and are
# discarded at the end. hack/bench runs it when OVERLAY=1.
set -Eeuo pipefail
cordon="$(realpath "${1:-bin/cordon}")"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-overlaybench.XXXXXX")"
export CORDON_OVERLAY_DIR="$tmp/store"
trap 'mountpoint -q "$tmp/ovl/merged" && umount "$tmp/ovl/merged"; "$cordon" discard u >/dev/null 2>&1 || true; "$cordon" discard c >/dev/null 2>&1 || true; rm -rf --one-file-system "$tmp"' EXIT
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
git init -q "$fix/repo"
for d in $(seq 0 49); do
  mkdir -p "$fix/repo/d$d"
  for f in $(seq 0 99); do echo "$d $f" >"$fix/repo/d$d/f$f"; done
done
git -C "$fix/repo" add -A
git -C "$fix/repo" -c user.name=b -c user.email=b@b commit -q -m fixture
cat >"$tmp/cfg.yaml" <<YAML
sandbox:
  root: ./work
  mounts:
    - {source: $fix, target: /fix, readonly: true}
YAML
bw=(bwrap)
for d in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc; do
  [ -e "$d" ] && bw+=(--ro-bind "$d" "$d")
done
bw+=(--proc /proc --dev /dev --tmpfs /tmp --ro-bind "$fix" /fix)
bwtail=(--chdir "$work" --unshare-all --die-with-parent --new-session)
[ "$(id -u)" -eq 0 ] && bwtail+=(--cap-drop ALL)
now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : int((a[NR/2]+a[NR/2+1])/2))}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a/b; else print "n/a"}'; }
# The machine may be loaded (other builds): each case alternates the
# sides N times (N=${ROUNDS:-5}) and reports the medians, with the load.
rounds="${ROUNDS:-5}"
declare -A cmd=([untar]='mkdir u && tar xf /fix/small.tar -C u' [git-clone]='git clone -q /fix/repo c')
declare -A ov=([untar]=u [git-clone]=c)
# inner wraps the work in the same clock reads for every side; the last
# line of the run's output is the work's own milliseconds.
inner() { echo "t0=\$(date +%s%N); $1 >/dev/null; t1=\$(date +%s%N); echo \$(( (t1 - t0) / 1000000 ))"; }
# The overlayfs peer: the work directory as the lower layer of an overlay
# mounted here with the options cordon gives its own (spec/oci_overlay.go),
# bound into bwrap as the work directory. Root only.
ovl=0
[ "$(id -u)" -eq 0 ] && ovl=1
mkdir -p "$tmp/ovl/merged"
mount_ovl() {
  rm -rf "$tmp/ovl/upper" "$tmp/ovl/work"; mkdir -p "$tmp/ovl/upper" "$tmp/ovl/work"
  mount -t overlay overlay -o "lowerdir=$work,upperdir=$tmp/ovl/upper,workdir=$tmp/ovl/work,index=off,metacopy=off,redirect_dir=off,nosuid,nodev" "$tmp/ovl/merged"
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $rounds rounds each, alternating"
printf '| case | bwrap ms | bwrap over overlayfs ms | cordon --overlay ms | cordon / bwrap (goal ≤ 1.3) | cordon / bwrap over overlayfs | in the sandbox: bwrap / over overlayfs / cordon ms | cordon / bwrap over overlayfs, in the sandbox | cordon runs (whole/inside) |\n|---|---|---|---|---|---|---|---|---|\n'
for c in untar git-clone; do
  bs=() bi=() vs=() vi=() os=() oi=() runs=()
  for _ in $(seq "$rounds"); do
    rm -rf "$work/u" "$work/c"; sync
    t0=$(now); out=$("${bw[@]}" --bind "$work" "$work" "${bwtail[@]}" -- sh -c "$(inner "${cmd[$c]}")"); t1=$(now)
    bs+=("$(ms "$t0" "$t1")") bi+=("${out##*$'\n'}")
    rm -rf "$work/u" "$work/c"
    if [ "$ovl" = 1 ]; then
      sync
      t0=$(now); mount_ovl
      out=$("${bw[@]}" --bind "$tmp/ovl/merged" "$work" "${bwtail[@]}" -- sh -c "$(inner "${cmd[$c]}")")
      umount "$tmp/ovl/merged"; t1=$(now)
      vs+=("$(ms "$t0" "$t1")") vi+=("${out##*$'\n'}")
    fi
    "$cordon" discard "${ov[$c]}" >/dev/null 2>&1 || true; sync
    t2=$(now); out=$(cd "$work" && "$cordon" run --config "$tmp/cfg.yaml" --overlay "${ov[$c]}" -- sh -c "$(inner "${cmd[$c]}")"); t3=$(now)
    os+=("$(ms "$t2" "$t3")") oi+=("${out##*$'\n'}") runs+=("$(ms "$t2" "$t3")/${out##*$'\n'}")
  done
  b=$(median "${bs[@]}") o=$(median "${os[@]}") v=n/a vin=n/a
  if [ "$ovl" = 1 ]; then v=$(median "${vs[@]}") vin=$(median "${vi[@]}"); fi
  printf '| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s |\n' "$c" "$b" "$v" "$o" "$(ratio "$o" "$b")" "$(ratio "$o" "$v")" \
    "$(median "${bi[@]}")" "$vin" "$(median "${oi[@]}")" "$(ratio "$(median "${oi[@]}")" "$vin")" "${runs[*]}"
done
rm -rf "$work/u" "$work/c"; sync
ds=() ss=()
for _ in $(seq "$rounds"); do
  t0=$(now); "$cordon" diff u >/dev/null; t1=$(now)
  t2=$(now); "$cordon" diff --stat u >/dev/null; t3=$(now)
  ds+=("$(ms "$t0" "$t1")") ss+=("$(ms "$t2" "$t3")")
done
printf '\n| cordon diff of 10,000 added files | median ms (goal ≤ 1000) | runs |\n|---|---|---|\n| patch | %s | %s |\n| --stat | %s | %s |\n' \
  "$(median "${ds[@]}")" "${ds[*]}" "$(median "${ss[@]}")" "${ss[*]}"
cs=() as=()
for i in $(seq "$rounds"); do
  if [ "$i" -gt 1 ]; then
    rm -rf "$work/u"; "$cordon" discard u >/dev/null
    (cd "$work" && "$cordon" run --config "$tmp/cfg.yaml" --overlay u -- sh -c "${cmd[untar]}") >/dev/null
  fi
  rm -rf "$tmp/cp-copy"; sync
  t0=$(now); cp -a "$CORDON_OVERLAY_DIR/u/upper/u" "$tmp/cp-copy"; sync; t1=$(now)
  sync
  t2=$(now); (cd "$work" && "$cordon" apply --config "$tmp/cfg.yaml" u 2>/dev/null); t3=$(now)
  [ "$(find "$work/u" -type f | wc -l)" = 10000 ] || { echo "overlay.sh: apply did not land 10,000 files" >&2; exit 1; }
  cs+=("$(ms "$t0" "$t1")") as+=("$(ms "$t2" "$t3")")
done
c=$(median "${cs[@]}") a=$(median "${as[@]}")
printf '\n| 10,000 files | cp -a + sync median ms | cordon apply median ms | ratio (goal ≤ 2) | cp runs | apply runs |\n|---|---|---|---|---|---|\n| apply | %s | %s | %s | %s | %s |\n' \
  "$c" "$a" "$(awk -v a="$a" -v b="$c" 'BEGIN {printf "%.2f", a/b}')" "${cs[*]}" "${as[*]}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
