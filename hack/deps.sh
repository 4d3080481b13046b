#!/usr/bin/env bash
# Installs what cordon's build and tests need, where it is missing: a C
# toolchain and libseccomp headers for runc's seccomp support, the network
# tests' tools and clients, and the peers
# the benchmarks compare against (bubblewrap, runc), crun for cordon bundle,
# podman and containerd for cordon-oci, and the cgroup v2 VM
# lane's qemu, static busybox, systemd and D-Bus (hack/vm; its kernel is
# fetched there).
set -Eeuo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists libseccomp 2>/dev/null || need+=(libseccomp-dev)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v runc >/dev/null 2>&1 || need+=(runc)
# cordon bundle is tested with both stock runtimes.
command -v crun >/dev/null 2>&1 || need+=(crun)
# cordon-oci (internal/ociruntime) is tested under real podman and
# containerd (ctr run --runc-binary, the shim a RuntimeClass uses).
command -v podman >/dev/null 2>&1 || need+=(podman)
{ command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1; } || need+=(containerd)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The network allow-list tests: test hosts in namespaces (ip), and the
# real clients run against them (curl, git, ssh; node's fetch when there).
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v git >/dev/null 2>&1 || need+=(git)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
# The VM runs a user's systemd and D-Bus (copied from this machine).
[ -x /lib/systemd/systemd ] && command -v busctl >/dev/null 2>&1 || need+=(systemd)
command -v dbus-daemon >/dev/null 2>&1 || need+=(dbus-daemon)
# A static busybox: the VM's initramfs has no libraries for it.
{ command -v busybox >/dev/null 2>&1 && ! ldd "$(command -v busybox)" >/dev/null 2>&1; } || need+=(busybox-static)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "hack/deps.sh: missing ${need[*]}; install them (Debian: apt-get install ${need[*]})" >&2
  exit 1
fi
echo "hack/deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
