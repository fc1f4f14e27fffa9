#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check-real: the real-clients tier (tests/real) in the root that
# scripts/setup-real-clients.sh unpacks, entered by scripts/in-real-root.sh.
# LW_TEST_JOBS (default: the number of cores) pytest processes run at once,
# each the interleaved share of the tests that LW_REAL_SHARD=I/N selects
# (tests/real/conftest.py): each test runs once, in one of them. Every job
# there is a Python process importing real PyTorch, numba or PyCUDA, bound by
# the CPU, so one share per core. Each share's output is printed when it
# ends; the last line is the tally, in the form scripts/run-tests.sh ends with:
#   check-real: 35 passed, 0 failed, 0 skipped
# Nothing in the tier may be skipped under CI (CI=true or CI=1): every test
# needs only the real clients, which the tier fails without.
#   scripts/check-real.sh          (make check-real)
set -u
cd "$(dirname "$0")/.." || exit 1
root=$(sh scripts/setup-real-clients.sh) || {
    echo "check-real: FAILED: the real clients cannot be set up here (see above)"
    exit 1
}
n=${LW_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
case "$n" in '' | *[!0-9]* | 0) echo "check-real: LW_TEST_JOBS must be a number >= 1, not '$n'" >&2; exit 2 ;; esac
tmp=$(mktemp -d /tmp/lwreal.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
i=0
while [ $i -lt "$n" ]; do
    i=$((i + 1))
    (
        # Its own pytest temporary folder: pytest prunes the numbered folders
        # of other runs in the shared one.
        sh scripts/in-real-root.sh "$root" LW_REAL_SHARD="$i/$n" CI="${CI:-}" \
            python3 -m pytest -p no:cacheprovider -q -rfEs --basetemp="$tmp/pytest.$i" tests/real \
            >"$tmp/out.$i" 2>&1
        echo $? >"$tmp/rc.$i"
        { flock 9 2>/dev/null; echo "== check-real: share $i of $n:"; cat "$tmp/out.$i"; } 9>"$tmp/print.lock"
    ) &
done
wait
passed=0 failed=0 skipped=0 status=0
i=0
while [ $i -lt "$n" ]; do
    i=$((i + 1))
    rc=$(cat "$tmp/rc.$i" 2>/dev/null || echo 1)
    # pytest's last line: "2 failed, 15 passed, 1 skipped, 18 deselected in 98.1s".
    last=$(grep -E '^[0-9]+ [a-z]+.* in [0-9.]+s' "$tmp/out.$i" | tail -1)
    p=$(echo "$last" | grep -oE '[0-9]+ passed' | cut -d' ' -f1)
    f=$(echo "$last" | grep -oE '[0-9]+ (failed|errors?)' | awk '{ s += $1 } END { print s + 0 }')
    s=$(echo "$last" | grep -oE '[0-9]+ skipped' | cut -d' ' -f1)
    passed=$((passed + ${p:-0}))
    skipped=$((skipped + ${s:-0}))
    # A share that failed without pytest's counts (the root, pytest itself)
    # is one failure more.
    if [ "$rc" -eq 5 ] && [ -n "$last" ]; then rc=0; fi # a share with no test left (more shares than tests)
    if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then f=1; fi
    failed=$((failed + ${f:-0}))
    [ "$rc" -eq 0 ] || status=1
done
case "${CI:-}" in "" | 0 | false | no) ;; *)
    if [ "$skipped" -ne 0 ]; then
        echo "check-real: FAILED under CI: $skipped skipped (the skip lines above); nothing in this tier may be skipped" >&2
        status=1
    fi
    ;;
esac
echo "check-real: $passed passed, $failed failed, $skipped skipped"
# For scripts/test-tally.sh (.ci/run's summary).
mkdir -p build/real && echo "$passed $failed $skipped" >build/real/.tally
exit $status
