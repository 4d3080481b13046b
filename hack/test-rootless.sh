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
go test -c -tags seccomp -o "$work/runner.test" ./runner/linux/
go test -c -o "$work/hostfile.test" ./internal/hostfile/
go test -c -tags seccomp -o "$work/cordon.test" .
go test -c -o "$work/netguard.test" ./internal/netguard/
go test -c -tags seccomp -o "$work/mcpserver.test" ./cmd/cordon/internal/mcpserver/
go test -c -o "$work/mounts.test" ./mounts/
go test -c -o "$work/xlock.test" ./mounts/xlock/
go test -c -tags seccomp -o "$work/ociruntime.test" ./internal/ociruntime/
go test -c -o "$work/overlay.test" ./internal/overlay/
go test -c -o "$work/cachedir.test" ./internal/cachedir/
go test -c -tags seccomp -o "$work/cmdcordon.test" ./cmd/cordon/
cp bin/cordon "$work/cordon"
# cordon-oci's tests run a build with their hooks (-tags cordon_testhooks:
# TestOCINetworkSlowSupervisor slows the supervisor through a file beside it).
mkdir "$work/oci"
go build -tags 'seccomp netgo osusergo cordon_testhooks' -ldflags '-linkmode external -extldflags -static' -o "$work/oci/cordon" ./cmd/cordon
ln -s cordon "$work/oci/cordon-oci"
mkdir -m 0700 "$work/xdg"
cp -r hack "$work/hack"
chown -R "$uid:$uid" "$work"
chmod 755 "$work"
as_user=(setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env
  env "HOME=$work" "TMPDIR=$work" "CI=${CI:-}" CORDON_ROOTLESS=1 "CORDON_NETTEST_ADDR=$nettest_addr" "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
# /dev/net/tun is mode 0600 on some hosts (0666 on most distributions): there
# a rootless user's allow list is refused. So that the rootless pass runs the
# tun path for real without changing the host, the tests run in a mount
# namespace of their own where a tun node of mode 0666 (on a tmpfs that only
# that namespace sees) is bound over /dev/net/tun; the refusal is checked
# against the host's own node below.
with_tun=()
if [ -c /dev/net/tun ]; then
  mkdir "$work/tun"
  with_tun=(unshare --mount --propagation private bash -c \
    'mount -t tmpfs -o mode=0755,size=16k cordon-tun "$1" && mknod -m 0666 "$1/tun" c 10 200 && mount --bind "$1/tun" /dev/net/tun && shift && exec "$@"' \
    with-tun "$work/tun")
  if ! "${with_tun[@]}" true; then
    echo "hack/test-rootless.sh: cannot bind a tun node over /dev/net/tun here (no mknod?); the allow-list tests see the host's node" >&2
    with_tun=()
  fi
fi
echo "== runner integration tests as uid $uid (rootless; /dev/net/tun opens for it)"
(cd "$work" && "${with_tun[@]}" "${as_user[@]}" "$work/runner.test" -test.count=1 -test.run 'Integration' -test.skip 'NetworkAllowList' -test.v 2>&1 | tail -n 60)
echo "== network allow lists as uid $uid: allowed requests byte for byte, refusals typed and audited"
(cd "$work" && "${with_tun[@]}" "${as_user[@]}" "$work/runner.test" -test.count=1 -test.run 'NetworkAllowList' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
(cd "$work" && "${with_tun[@]}" "${as_user[@]}" "$work/cordon.test" -test.count=1 -test.run 'AllowListAudited' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|network_denied')
if ! "${as_user[@]}" test -r /dev/net/tun -a -w /dev/net/tun; then
  echo "== the host's /dev/net/tun (mode $(stat -c %a /dev/net/tun)) as uid $uid: the allow list is refused with the reason"
  (cd "$work" && "${as_user[@]}" "$work/runner.test" -test.count=1 -test.run 'TestIntegrationNetworkAllowList$' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|cannot open /dev/net/tun')
fi
echo "== git out of the box as uid $uid (rootless): identity, submodules, a linked worktree and a submodule checkout as workspaces"
(cd "$work" && "${as_user[@]}" "$work/cordon.test" -test.count=1 -test.run 'TestIntegrationGit' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|git_linux_test')
echo "== the recorded agent task, session start NAME and a rootless bundle as uid 4242: these tests drop to uid 4242 with setpriv themselves (cordon's CLI binary, as a harness runs it)"
(cd cmd/cordon && "$work/cmdcordon.test" -test.count=1 -test.run 'TestIntegrationAgentTaskDefaultProfile/rootless|TestSessionCLIPositionalName/rootless|TestBundleRootlessRunc|TestCheckAgreesWithRunOnLinkTargets/rootless' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|    --- |agenttask_linux_test|_test.go')
echo "== macOS's allow-list proxy as uid $uid: curl, git and Python through it, refusals typed and audited"
(cd "$work" && "${as_user[@]}" "$work/netguard.test" -test.count=1 -test.run 'TestProxy' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
echo "== one decision for every writer as uid $uid (rootless): the broker, Files, the MCP write tool and cordon check"
(cd "$work" && "${as_user[@]}" "$work/mcpserver.test" -test.count=1 -test.run 'Integration' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|decide_test')
(cd "$work" && "${as_user[@]}" "$work/mounts.test" -test.count=1 -test.run 'TestWritePlantsNoRepository|TestWriteLockHeldFailsClosed|TestWriteGitCodeProtected|TestWriteGitLinkKernelPath|TestWriteWorktreeKernelPath|TestLinkTargetsHeldByTable' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|decide_test')
(cd "$work" && "${as_user[@]}" "$work/cordon.test" -test.count=1 -test.run 'TestIntegrationToolsAgreeWithRunOnLinkTargets|TestIntegrationRunLinkWalkOnce' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|_test.go')
echo "== the cross-sandbox directory lock as uid $uid (rootless): held across processes, fails closed on a directory it cannot read"
(cd "$work" && "${as_user[@]}" "$work/xlock.test" -test.count=1 -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
echo "== copy-on-write overlays as uid $uid (rootless overlayfs in the user namespace): git in two overlays, conflicts and protect paths refused at apply, discard, SIGKILL"
(cd "$work" && "${as_user[@]}" "$work/overlay.test" -test.count=1 -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
(cd "$work" && "${as_user[@]}" "$work/cordon.test" -test.count=1 -test.run 'Overlay' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|_test.go')
echo "== caches, toolchains and CA files as uid $uid (rootless): the caches are the user's own, a go build reuses them"
(cd "$work" && "${as_user[@]}" "$work/cordon.test" -test.count=1 -test.run 'TestIntegrationCachesGoBuild|TestIntegrationToolchains|TestIntegrationCAVariables' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)|first build')
(cd "$work" && "${as_user[@]}" "$work/cachedir.test" -test.count=1 -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
echo "== host files cordon writes (report, audit log) as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "$work/hostfile.test" -test.count=1 -test.v 2>&1 | tail -n 20)
echo "== cordon-oci under rootless podman as uid $uid: run, exec, a TTY, stop, deny and protect held (the broker's plants too), the allow list held, annotations refused"
(cd "$work" && "${with_tun[@]}" "${as_user[@]}" "XDG_RUNTIME_DIR=$work/xdg" "CORDON_OCI_BIN=$work/oci/cordon-oci" "$work/ociruntime.test" -test.count=1 \
  -test.run 'TestOCIPodman|TestOCIDelete|TestOCIDeny|TestOCIBrokerProtectHeld|TestOCINetwork|TestOCIAnnotation|TestOCIAuditPath|TestOCIOpenByHandle|TestOCINoListenerOfItsOwn|TestOCIStartWithoutSupervisor|TestOCIPrivileged|TestOCICommandLine|TestParseBoundary' -test.v 2>&1 | grep -E '^(--- |ok|FAIL|PASS)')
echo "== escape suite as uid $uid (rootless)"
(cd "$work" && "${as_user[@]}" "CORDON_BIN=$work/cordon" bash "$work/hack/escape-suite.sh")
