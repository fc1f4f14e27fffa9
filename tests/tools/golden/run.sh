#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The golden files of the command's renderers: each case of `cases` runs
# `leakwatch report` on fixed report inputs (inputs/*.json, made by
# make-inputs.sh) and its stdout is compared byte for byte with
# expected/NAME, its exit status with the case's.
#   run.sh BUILD check    fails on any difference, showing it (make check-golden)
#   run.sh BUILD update   writes expected/ again and prints what changed
#                         (make golden-update: read the diff, then commit)
# Nothing variable is left to normalise in the outputs: the inputs carry
# fixed times, pids, hosts and paths (normalise.py), and the command runs
# with a fixed environment: TZ=UTC (the text shows written_at as local
# time), LC_ALL=C, no LEAKWATCH_* variable (LEAKWATCH_USER_CODE would
# change the place named), stdout a file (never a terminal, which would
# change HTML's destination). The command's own version is in no output
# (the reports' "version" is the input's).
set -u
B=${1:?usage: run.sh BUILD check|update}
mode=${2:?usage: run.sh BUILD check|update}
case "$mode" in check | update) ;; *) echo "run.sh: mode check or update, not $mode" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
exe=$(cd "$B" && pwd)/leakwatch
[ -x "$exe" ] || { echo "golden: FAILED: no $exe (make first)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/lwgolden.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0 changed=0 n=0
# The inputs are named relative to the golden folder, as the cases give them.
cd "$here" || exit 1
while read -r name status args; do
    case "$name" in '' | '#'*) continue ;; esac
    n=$((n + 1))
    # shellcheck disable=SC2086
    env -i PATH=/usr/bin:/bin TZ=UTC LC_ALL=C "$exe" report $args >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$status" ]; then
        echo "golden: $name: exit status $rc, expected $status; stderr:"
        cat "$tmp/err"
        failed=$((failed + 1))
        continue
    fi
    if [ "$mode" = update ]; then
        if ! cmp -s "$tmp/out" "expected/$name"; then
            diff -u "expected/$name" "$tmp/out" 2>/dev/null | sed "1,2s|$tmp/out|expected/$name (new)|"
            [ -f "expected/$name" ] || echo "golden: $name: new"
            cp "$tmp/out" "expected/$name"
            changed=$((changed + 1))
        fi
    elif ! cmp -s "$tmp/out" "expected/$name"; then
        echo "golden: $name: leakwatch report $args differs from tests/tools/golden/expected/$name:"
        diff -u "expected/$name" "$tmp/out" | head -60
        failed=$((failed + 1))
    fi
done <cases
# Expected files no case makes are stale.
for f in expected/*; do
    [ -e "$f" ] || continue
    grep -q "^$(basename "$f") " cases && continue
    if [ "$mode" = update ]; then
        echo "golden: $f: no case makes it: removed"
        rm -f "$f"
        changed=$((changed + 1))
    else
        echo "golden: $f: no case makes it (make golden-update removes it)"
        failed=$((failed + 1))
    fi
done
if [ "$mode" = update ]; then
    echo "golden: $n cases, $changed files changed in tests/tools/golden/expected (read the diff above, then commit)"
    [ "$failed" = 0 ]
    exit
fi
if [ "$failed" != 0 ]; then
    echo "golden: FAILED: $failed of $n cases differ (if the change is meant: make golden-update, read its diff, commit)"
    exit 1
fi
echo "golden: $n renderings of leakwatch report equal tests/tools/golden/expected"
