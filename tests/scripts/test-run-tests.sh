#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/run-tests.sh on stand-in test binaries (small shell scripts that
# print what a Check binary prints): its closing tally counts Check's tests
# and the skip lines, lists the skips, ends with the line CI reads, and under
# CI=true fails on a skip of something CI is supposed to have; with
# LW_TEST_JOBS above 1, the same tally, each binary's output in one piece,
# and the LW_TEST_ALONE binaries after the others.
#   tests/scripts/test-run-tests.sh      (make check-scripts)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-run-tests.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
fail() {
    failed=$((failed + 1))
    echo "test-run-tests: FAIL: $*" >&2
    sed 's/^/    /' "$T/out" >&2
}

bin() { # bin NAME BODY: a stand-in test binary
    printf '#!/bin/sh\n%s\n' "$2" >"$T/$1"
    chmod +x "$T/$1"
}
bin test_ok 'echo "Running suite(s): ok"
echo "test_ok: full tmpfs case skipped: mounting a tmpfs needs root"
echo "test_ok: full tmpfs case skipped: mounting a tmpfs needs root"
echo "100%: Checks: 5, Failures: 0, Errors: 0"'
bin test_nvidia 'echo "test_nvidia: Debian'"'"'s libcuda1 and libcudart11.0 are not unpacked: the layouts on NVIDIA'"'"'s real driver are skipped" >&2
echo "100%: Checks: 3, Failures: 0, Errors: 0"'
bin test_bad 'echo "t.c:12:F:case:a_case:0: the pane never showed X"
echo "60%: Checks: 5, Failures: 1, Errors: 1"; exit 2'
bin test_crash 'echo starting; kill -SEGV $$'

# run EXPECTED_STATUS [VAR=VALUE...] BINARIES...
run() {
    want=$1
    shift
    env "$@" >"$T/out" 2>&1
    got=$?
    [ "$got" = "$want" ] || fail "status $got, expected $want: $*"
}
last() { # last LINE: the output's last line is LINE
    [ "$(tail -1 "$T/out")" = "$1" ] || fail "last line is not '$1'"
}
has() {
    grep -qF -- "$1" "$T/out" || fail "no line with '$1'"
}

R="$root/scripts/run-tests.sh"
# Passing binaries with skips: each distinct skip line once, counted.
run 0 CI= "$R" "$T/build" "$T/test_ok" "$T/test_nvidia"
last "8 passed, 0 failed, 2 skipped"
has "tests: 2 binaries: 2 passed, 0 failed; 8 checks; 2 skips:"
has "  test_ok: full tmpfs case skipped: mounting a tmpfs needs root"
has "  test_nvidia: Debian's libcuda1"
[ "$(grep -c 'mounting a tmpfs needs root' "$T/out")" = 3 ] || fail "the repeated skip line is not listed once"

# Failures: Check's failed tests, and a binary that died before its summary.
run 1 CI= "$R" "$T/build" "$T/test_ok" "$T/test_bad" "$T/test_crash"
last "8 passed, 3 failed, 1 skipped"
has "tests: 3 binaries: 1 passed, 2 failed (test_bad test_crash); 11 checks; 1 skips:"
# Repeated at the end, where a CI log's tail shows them: the failure lines,
# or the last lines of a binary that has none.
sed -n '/^what failed:$/,$p' "$T/out" >"$T/tail"
grep -qF "t.c:12:F:case:a_case:0: the pane never showed X" "$T/tail" || fail "failure line not repeated"
grep -qx "starting" "$T/tail" || fail "a crashed binary's last lines not repeated"

# Under CI a skip of a required component (NVIDIA's Debian libraries) fails
# the run; one CI cannot have (a case that needs root, where CI is not root) does not.
run 1 CI=true "$R" "$T/build" "$T/test_ok" "$T/test_nvidia"
last "8 passed, 0 failed, 2 skipped"
has "FAILED under CI: CI is supposed to have NVIDIA's Debian libraries"
run 0 CI=true "$R" "$T/build" "$T/test_ok"
last "5 passed, 0 failed, 1 skipped"
# tmux (leakwatch top's test) is one of what CI has.
bin test_top 'echo "test_top: top_keys_and_job_exit_in_tmux skipped: tmux is not installed"
echo "100%: Checks: 1, Failures: 0, Errors: 0"'
run 1 CI=1 "$R" "$T/build" "$T/test_top"
has "FAILED under CI: CI is supposed to have tmux"

# No skips: the tally says so.
bin test_clean 'echo "100%: Checks: 2, Failures: 0, Errors: 0"'
run 0 CI=true "$R" "$T/build" "$T/test_clean"
last "2 passed, 0 failed, 0 skipped"
has "tests: 1 binaries: 1 passed, 0 failed; 2 checks; 0 skips"

# In parallel (LW_TEST_JOBS=2, the default) the same tally as one at a time,
# each binary's output in one piece although two binaries print at once, and
# a binary in LW_TEST_ALONE started only after the others have ended.
bin test_slow1 'echo "slow1 a"; sleep 1; echo "slow1 b"; touch "$(dirname "$0")/done1"
echo "100%: Checks: 1, Failures: 0, Errors: 0"'
bin test_slow2 'echo "slow2 a"; sleep 1; echo "slow2 b"; touch "$(dirname "$0")/done2"
echo "100%: Checks: 1, Failures: 0, Errors: 0"'
bin test_alone 'd=$(dirname "$0"); [ -e "$d/done1" ] && [ -e "$d/done2" ] || { echo "alone: another binary still runs"; exit 1; }
echo "100%: Checks: 1, Failures: 0, Errors: 0"'
for jobs in 1 2 3; do
    rm -f "$T/done1" "$T/done2"
    run 1 CI= LW_TEST_JOBS=$jobs LW_TEST_ALONE=test_alone "$R" "$T/build" "$T/test_alone" "$T/test_slow1" \
        "$T/test_ok" "$T/test_bad" "$T/test_slow2" "$T/test_crash"
    last "11 passed, 3 failed, 1 skipped"
    has "tests: 6 binaries: 4 passed, 2 failed (test_bad test_crash); 14 checks; 1 skips:"
    has "== test_alone: passed in"
    has "== test_crash: FAILED"
    for b in slow1 slow2; do
        [ "$(grep -A1 -x "$b a" "$T/out" | tail -1)" = "$b b" ] || fail "jobs=$jobs: test_$b's output is split"
    done
done
run 2 LW_TEST_JOBS=x "$R" "$T/build" "$T/test_ok"

# Each binary's CPU time (user and system, its children's included) beside
# its wall time: a binary that sleeps shows little, one that computes shows
# about its wall time.
bin test_busy 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done
echo "100%: Checks: 1, Failures: 0, Errors: 0"'
run 0 CI= LW_TEST_JOBS=1 "$R" "$T/build" "$T/test_slow1" "$T/test_busy"
line=$(grep '^== test_slow1: passed in' "$T/out")
case "$line" in *" s (0.0 s CPU)") ;; *) fail "a sleeping binary's CPU time: $line" ;; esac
line=$(grep '^== test_busy: passed in' "$T/out")
case "$line" in *" s (0.0 s CPU)" | "") fail "a busy binary's CPU time: $line" ;; esac
has "time: "
has "s CPU (user and system) in all"

# The queue starts with the binary that took longest last time in this
# build folder ($B/tests/.durations, written by the run before).
mkdir -p "$T/build/tests"
printf 'test_clean 5000\ntest_ok 10\n' >"$T/build/tests/.durations"
run 0 CI= LW_TEST_JOBS=1 "$R" "$T/build" "$T/test_ok" "$T/test_clean" "$T/test_busy"
[ "$(grep '^== ' "$T/out" | cut -d: -f1 | tr '\n' ' ')" = "== test_clean == test_ok == test_busy " ] ||
    fail "not the longest first, then the unknown in their order"
grep -q '^test_busy [0-9]' "$T/build/tests/.durations" || fail "the durations were not kept for the next run"
# A binary the build folder has no time for takes it from the seed
# (LW_TEST_SEED, in seconds): test_clean keeps its own 5 s, test_busy has
# one now, test_crash (1000 s in the seed) goes first.
printf '# name seconds\ntest_crash 1000\ntest_clean 1\n' >"$T/seed"
run 1 CI= LW_TEST_JOBS=1 LW_TEST_SEED="$T/seed" "$R" "$T/build" "$T/test_clean" "$T/test_crash"
[ "$(grep '^== ' "$T/out" | cut -d: -f1 | tr '\n' ' ')" = "== test_crash == test_clean " ] ||
    fail "the seed's times were not used for a binary with none kept"

# The counts left for scripts/test-tally.sh (make check's and .ci/run's
# summary): the last run's, per flavour and in all; a flavour whose file is
# older than the --since file was not run this time.
run 0 CI= "$R" "$T/build" "$T/test_ok" "$T/test_nvidia"
[ "$(cat "$T/build/tests/.tally")" = "8 0 2" ] || fail "the tally file holds '$(cat "$T/build/tests/.tally")'"
mkdir -p "$T/old/tests"
echo "1 1 1" >"$T/old/tests/.tally"
touch -d '2001-01-01' "$T/old/tests/.tally"
touch -d '2002-01-01' "$T/start"
env "$root/scripts/test-tally.sh" --since "$T/start" plain="$T/build/tests/.tally" ASan="$T/build/tests/.tally" \
    TSan="$T/old/tests/.tally" >"$T/out" 2>&1
has "tests plain: 8 passed, 0 failed, 2 skipped"
has "tests TSan: not run"
last "tests in all: 16 passed, 0 failed, 4 skipped (plain 2, ASan 2); not run: TSan"

if [ $failed -ne 0 ]; then
    echo "test-run-tests: $failed failed"
    exit 1
fi
echo "test-run-tests: scripts/run-tests.sh counts tests and skips, and fails a CI run on a required skip, in parallel too"
