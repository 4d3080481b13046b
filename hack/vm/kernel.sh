#!/usr/bin/env bash
# Prints the path of a cgroup-v2-capable kernel for the VM lane, fetching it
# once: Debian's cloud kernel package, extracted (nothing is installed), is
# cached under DIR (default bin/vm) by its package name.
set -Eeuo pipefail
dir=${1:-bin/vm}
mkdir -p "$dir"

meta=linux-image-cloud-amd64
pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}') || true
if [ -z "$pkg" ]; then
  # No package lists yet (a bare machine): read them once.
  apt-get update -qq >/dev/null
  pkg=$(apt-cache depends "$meta" | awk '/Depends: linux-image-/{print $2; exit}')
fi
if [ -z "$pkg" ]; then
  echo "hack/vm/kernel.sh: cannot resolve $meta to a kernel package; fix: apt-get update" >&2
  exit 1
fi
out="$dir/$pkg/vmlinuz"
if [ ! -s "$out" ]; then
  tmp=$(mktemp -d "$dir/.kernel.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
  # Stale package lists can name a version the mirror no longer has: read
  # them again once before giving up.
  if ! (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
    apt-get update -qq >/dev/null 2>&1 || true
    (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1) || {
      echo "hack/vm/kernel.sh: apt-get download $pkg failed; fix: apt-get update (as root), or check the package mirror" >&2
      exit 1
    }
  fi
  dpkg-deb -x "$tmp"/*.deb "$tmp/x"
  mkdir -p "$dir/$pkg"
  cp "$tmp"/x/boot/vmlinuz-* "$out.part"
  mv "$out.part" "$out"
fi
echo "$out"
