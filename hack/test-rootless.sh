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
trap 'rm -rf "$work"' EXIT
go test -c -tags seccomp -o "$work/runner.test" ./runner/
cp bin/cordon "$work/cordon"
cp -r hack "$work/hack"
chown -R "$uid:$uid" "$work"
chmod 755 "$work"
as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env
  env "HOME=$work" "TMPDIR=$work" "CI=${CI:-}" CORDON_ROOTLESS=1 "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
echo "== runner integration tests as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "$work/runner.test" -test.count=1 -test.run 'Integration' -test.v 2>&1 | tail -n 60)
echo "== escape suite as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "CORDON_BIN=$work/cordon" bash "$work/hack/escape-suite.sh")
