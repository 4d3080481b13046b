#!/usr/bin/env bash
# The cgroup v2 lane: boots Debian's cloud kernel under qemu (TCG: no KVM
# needed) with an initramfs holding busybox, the cordon binary and its
# libraries, setpriv and hack/vm/vm-tests.sh, and runs cordon's run, limit,
# timeout and leftover cases there as root and as a delegated uid. The VM's
# console is printed here; the lane fails unless the VM reports every case
# passed (a VM that hangs, panics or stops early fails it too).
#
#   bash hack/vm/run.sh [CORDON_BIN]     (default bin/cordon; root not needed)
#
# The kernel is fetched once into bin/vm (VM_DIR); the initramfs is rebuilt
# each time (about a second).
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-bin/cordon}
dir=${VM_DIR:-bin/vm}
limit=${VM_TIMEOUT:-600}
# The cases vm-tests.sh runs: ten as root, ten, leaves and doctor as
# uid 4242, ten and doctor as uid 4244, the refusal, its leftover check
# and doctor as uid 4243. Fewer PASS lines than this fails the lane.
want=36

for tool in qemu-system-x86_64 busybox setpriv dbus-daemon busctl /lib/systemd/systemd; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "hack/vm/run.sh: $tool is missing; fix: make deps (apt-get install qemu-system-x86 busybox-static util-linux systemd dbus-daemon)" >&2
    exit 1
  }
done
[ -x "$bin" ] || { echo "hack/vm/run.sh: no cordon binary at $bin; fix: make build" >&2; exit 1; }
bin=$(realpath "$bin")

kernel=$(bash hack/vm/kernel.sh "$dir")
mkdir -p "$dir"
stage=$(mktemp -d "$dir/.initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# copy_with_libs FILE DEST: FILE at DEST in the image, and the shared
# libraries ldd lists for it at their own paths (none for a static one).
copy_with_libs() {
  install -D -m 755 "$1" "$stage$2"
  { ldd "$1" 2>/dev/null || true; } | { grep -o '/[^ ]*' || true; } | while read -r lib; do
    [ -e "$stage$lib" ] || install -D -m 755 "$lib" "$stage$lib"
  done
}
install -D -m 755 "$(command -v busybox)" "$stage/bin/busybox"
ldd "$stage/bin/busybox" >/dev/null 2>&1 && {
  echo "hack/vm/run.sh: busybox must be static; fix: apt-get install busybox-static" >&2
  exit 1
}
copy_with_libs "$bin" /bin/cordon
# Not in /bin: busybox --install would replace it with its own applet.
copy_with_libs "$(command -v setpriv)" /usr/bin/setpriv
# The user's systemd and D-Bus, for uid 4244: the binaries, the user units
# (dbus.socket starts the bus) and the bus's configuration.
copy_with_libs /lib/systemd/systemd /lib/systemd/systemd
copy_with_libs "$(command -v dbus-daemon)" /usr/bin/dbus-daemon
copy_with_libs "$(command -v busctl)" /usr/bin/busctl
mkdir -p "$stage/usr/lib/systemd" "$stage/usr/share/dbus-1"
cp -a /usr/lib/systemd/user "$stage/usr/lib/systemd/"
cp -a /usr/share/dbus-1/session.conf "$stage/usr/share/dbus-1/"
install -m 755 hack/vm/init "$stage/init"
install -m 755 hack/vm/vm-tests.sh "$stage/vm-tests.sh"
initrd="$dir/initramfs.cpio.gz"
(cd "$stage" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$initrd.part"
mv "$initrd.part" "$initrd"

log="$dir/console.log"
# On a busy host TCG's vCPU threads can be kept off a CPU for tens of
# seconds; the guest's soft-lockup and RCU-stall watchdogs then fire and
# the guest can stall for good (seen at load 5: 0 of 36 cases, then the
# timeout). The guest's watchdogs are off (a host that starves the VM is
# not a kernel bug to report), and a boot that ran no case at all (no
# PASS or FAIL line, no end marker) is tried once more; a case that ran
# and failed is never retried.
boot() {
  echo "== booting $kernel (qemu TCG, cgroup v2, load $(cut -d' ' -f1 /proc/loadavg)); console follows"
  set +e
  timeout --kill-after=10 "$limit" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 \
    -nographic -monitor none -no-reboot \
    -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 systemd.unified_cgroup_hierarchy=1 nowatchdog nosoftlockup rcupdate.rcu_cpu_stall_suppress=1 tsc=reliable" \
    </dev/null 2>&1 | tr -d '\r' | tee "$log"
  qrc=${PIPESTATUS[0]}
  set -e
}
start=$(date +%s)
boot
if ! grep -qE '^(PASS|FAIL) |^CORDON-VM-END ' "$log"; then
  echo "== the VM ran no case (qemu exit $qrc): booting once more"
  boot
fi
took=$(($(date +%s) - start))

pass=$(grep -c '^PASS ' "$log" || true)
fail=$(grep -c '^FAIL ' "$log" || true)
end=$(grep -m1 '^CORDON-VM-END ' "$log" || true)
echo "== VM lane: $pass passed, $fail failed (want $want passed), in ${took}s; qemu exit $qrc; ${end:-no end marker}"

# Cold start: the VM timed ten `cordon run -- true` as root; time the same
# here and print the ratio only (TCG times are not real times).
vmms=$(sed -n 's/^COLDSTART-MS \([0-9]*\)$/\1/p' "$log" | head -n 1)
if [ -n "$vmms" ] && [ "$(id -u)" -eq 0 ]; then
  ws=$(mktemp -d /tmp/cordon-vm-host.XXXXXX)
  t0=$(date +%s%N)
  failed=0
  for _ in 1 2 3 4 5 6 7 8 9 10; do (cd "$ws" && "$bin" run -- true >/dev/null 2>&1) || failed=1; done
  t1=$(date +%s%N)
  rm -rf "$ws"
  hostus=$(((t1 - t0) / 10000))
  [ "$failed" -eq 0 ] && echo "== cold start of cordon run -- true: VM (v2, TCG) / host ($(stat -fc %T /sys/fs/cgroup | sed 's/cgroup2fs/v2/;s/tmpfs/v1/')) = $(awk -v a="$vmms" -v b="$hostus" 'BEGIN{printf "%.1f", a * 1000 / b}')"
fi

if [ "$fail" -ne 0 ] || [ "$pass" -lt "$want" ] || [ "$end" != "CORDON-VM-END status=0" ]; then
  echo "hack/vm/run.sh: the cgroup v2 lane failed (console: $log)" >&2
  exit 1
fi
