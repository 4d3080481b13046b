#!/usr/bin/env bash
# Installs the pinned linters `make lint` runs into DIR (default bin/tools):
# staticcheck and goimports, each under its version so a bump reinstalls.
# Only Go and its module proxy are needed, as on a bare CI machine.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
dir="${1:-bin/tools}"
staticcheck_version=v0.8.2 # staticcheck 2026.1.2, for Go 1.26
goimports_version=v0.52.0  # golang.org/x/tools
install() {
  local name=$1 pkg=$2 version=$3
  if [ -x "$dir/$version/$name" ]; then
    ln -sf "$version/$name" "$dir/$name"
    return
  fi
  mkdir -p "$dir/$version"
  echo "hack/lint-tools.sh: installing $name $version" >&2
  GOBIN="$(cd "$dir/$version" && pwd)" CGO_ENABLED=0 go install "$pkg@$version"
  ln -sf "$version/$name" "$dir/$name"
}
install staticcheck honnef.co/go/tools/cmd/staticcheck "$staticcheck_version"
install goimports golang.org/x/tools/cmd/goimports "$goimports_version"
