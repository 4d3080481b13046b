#!/usr/bin/env bash
# Checks the size rules of docs/style.md: no non-test Go file and no C file
# (.c or .h) over 600 lines, and no Go function over 120 lines, in the
# packages given (default: runner, darwin and spec). gofmt'ed code starts a
# top-level function with "func" and ends it with "}" in column one, so awk
# can measure it.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
max_file=600
max_func=${CORDON_MAX_FUNC:-120}
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(runner darwin spec)
files=$(git ls-files -- "${dirs[@]/%//*.go}" | grep -v '_test\.go$' || true)
cfiles=$(git ls-files -- "${dirs[@]/%//*.c}" "${dirs[@]/%//*.h}" || true)
bad=0
for f in $files $cfiles; do
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_file" ]; then
    echo "$f: $n lines (limit $max_file): split it by concern" >&2
    bad=1
  fi
done
# shellcheck disable=SC2086
if [ -n "$files" ] && ! awk -v max="$max_func" '
  /^func / { name = $0; sub(/[[:space:]]*\{[[:space:]]*$/, "", name); start = FNR; next }
  /^}/ && start { if (FNR - start + 1 > max) { printf "%s:%d: %s is %d lines (limit %d)\n", FILENAME, start, name, FNR - start + 1, max; bad = 1 } start = 0 }
  END { exit bad }' $files >&2; then
  bad=1
fi
exit $bad
