#!/usr/bin/env bash
# hack/bench.d/overlay-cpu.sh [CORDON]: the CPU time (perf stat's
# task-clock: the runner and every process below it, in the kernel too)
# of the untar and git-clone cases of overlay.sh, which a loaded machine
# moves far less than their wall time: bwrap into the work directory (a
# plain bind), bwrap into an overlayfs of it mounted here with cordon's
# options (its umount is not counted: cordon's run pays it when its mount
# namespace goes), cordon run --overlay, and `true` in bwrap and in a new
# cordon overlay (each runner's cold start). Root only; ROUNDS (default
# 5) alternated runs, medians. The fixtures are overlay.sh's.
set -Eeuo pipefail
cordon="$(realpath "${1:-bin/cordon}")"
[ "$(id -u)" -eq 0 ] || { echo "overlay-cpu.sh: needs root (it mounts an overlayfs for the bwrap peer)" >&2; exit 1; }
command -v perf >/dev/null || { echo "overlay-cpu.sh: needs perf" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cordon-overlaycpu.XXXXXX")"
export CORDON_OVERLAY_DIR="$tmp/store"
trap 'mountpoint -q "$tmp/ovl/merged" && umount "$tmp/ovl/merged"; "$cordon" discard u >/dev/null 2>&1 || true; rm -rf --one-file-system "$tmp"' EXIT
fix="$tmp/fix" work="$tmp/work"
mkdir -p "$fix/tree" "$work" "$tmp/ovl/merged"
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
printf 'sandbox:\n  root: ./work\n  mounts:\n    - {source: %s, target: /fix, readonly: true}\n' "$fix" >"$tmp/cfg.yaml"
bw=(bwrap)
for d in /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc; do
  [ -e "$d" ] && bw+=(--ro-bind "$d" "$d")
done
bw+=(--proc /proc --dev /dev --tmpfs /tmp --ro-bind "$fix" /fix)
bwtail=(--chdir "$work" --unshare-all --die-with-parent --new-session --cap-drop ALL)
cpu() { perf stat -x, -e task-clock -o "$tmp/stat" "$@" >/dev/null 2>&1; awk -F, '/task-clock/ {printf "%.1f", $1}' "$tmp/stat"; }
declare -A cmd=([untar]='mkdir u && tar xf /fix/small.tar -C u' [git-clone]='git clone -q /fix/repo u')
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, ${ROUNDS:-5} rounds, CPU ms (median, then every run)"
for c in untar git-clone true; do
  for _ in $(seq "${ROUNDS:-5}"); do
    if [ "$c" = true ]; then
      echo "true bwrap $(cpu "${bw[@]}" --bind "$work" "$work" "${bwtail[@]}" -- true)"
      "$cordon" discard u >/dev/null 2>&1 || true
      echo "true cordon $(cd "$work" && cpu "$cordon" run --config "$tmp/cfg.yaml" --overlay u -- true)"
      continue
    fi
    rm -rf "$work/u"; sync
    echo "$c bwrap $(cpu "${bw[@]}" --bind "$work" "$work" "${bwtail[@]}" -- sh -c "${cmd[$c]}")"
    rm -rf "$work/u" "$tmp/ovl/upper" "$tmp/ovl/work"; mkdir -p "$tmp/ovl/upper" "$tmp/ovl/work"; sync
    mount -t overlay overlay -o "lowerdir=$work,upperdir=$tmp/ovl/upper,workdir=$tmp/ovl/work,index=off,metacopy=off,redirect_dir=off,nosuid,nodev" "$tmp/ovl/merged"
    echo "$c bwrap-over-overlayfs $(cpu "${bw[@]}" --bind "$tmp/ovl/merged" "$work" "${bwtail[@]}" -- sh -c "${cmd[$c]}")"
    umount "$tmp/ovl/merged"
    "$cordon" discard u >/dev/null 2>&1 || true; sync
    echo "$c cordon-overlay $(cd "$work" && cpu "$cordon" run --config "$tmp/cfg.yaml" --overlay u -- sh -c "${cmd[$c]}")"
  done
done | awk '{k=$1" "$2; v[k]=v[k]" "$3; if (!(k in seen)) {seen[k]=1; order[++n]=k}}
  END {printf "| case | runner | CPU ms (median) | runs |\n|---|---|---|---|\n";
    for (i=1; i<=n; i++) {k=order[i]; m=split(substr(v[k],2),a," "); asort_n(a, m); split(k, kk, " ");
      printf "| %s | %s | %.1f | %s |\n", kk[1], kk[2], a[int((m+1)/2)], substr(v[k],2)}}
  function asort_n(a, m,   i, j, t) {for (i=2; i<=m; i++) for (j=i; j>1 && a[j-1]+0 > a[j]+0; j--) {t=a[j]; a[j]=a[j-1]; a[j-1]=t}}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
