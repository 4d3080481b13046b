#!/usr/bin/env bash
# Runs the runner's integration tests and the escape suite as an unprivileged
# user: root drops to CORDON_TEST_UID with setpriv, so rootless mode is tested
# for real, not by pretending.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
uid="${CORDON_TEST_UID:-4242}"
if [ "$(id -u)" -ne 0 ]; then
  msg="hack/test-rootless.sh: needs root to drop to uid $uid with setpriv"
  if [ "${CI:-}" = "true" ]; then echo "$msg (CI=true: failing instead of skipping)" >&2; exit 1; fi
  echo "$msg; skipped" >&2
  exit 0
fi
work="$(mktemp -d /tmp/cordon-rootless.XXXXXX)"
# The network allow-list tests need an address on this machine that is
# not loopback (the sandbox's loopback is its own): the host end of a veth
# pair whose other end is in a namespace of its own; the unprivileged
# tests start their servers on that address.
netns="cordon-rl-$$"
netlink="crl$$"
netlink="${netlink:0:14}"
nettest_addr="10.213.251.$(( $$ % 200 + 20 ))"
ip netns add "$netns"
trap 'rm -rf "$work"; ip link del "${netlink}h" 2>/dev/null || true; ip netns del "$netns" 2>/dev/null || true' EXIT
ip link add "${netlink}h" type veth peer name "${netlink}p" netns "$netns"
ip addr add "$nettest_addr/32" dev "${netlink}h"
ip link set "${netlink}h" up
go test -c -tags seccomp -o "$work/runner.test" ./runner/
go test -c -o "$work/hostfile.test" ./internal/hostfile/
cp bin/cordon "$work/cordon"
cp -r hack "$work/hack"
chown -R "$uid:$uid" "$work"
chmod 755 "$work"
as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env
  env "HOME=$work" "TMPDIR=$work" "CI=${CI:-}" CORDON_ROOTLESS=1 "CORDON_NETTEST_ADDR=$nettest_addr" "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
echo "== runner integration tests as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "$work/runner.test" -test.count=1 -test.run 'Integration' -test.v 2>&1 | tail -n 60)
echo "== host files cordon writes (report, audit log) as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "$work/hostfile.test" -test.count=1 -test.v 2>&1 | tail -n 20)
echo "== escape suite as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "CORDON_BIN=$work/cordon" bash "$work/hack/escape-suite.sh")
