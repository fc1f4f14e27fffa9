#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The plain suite on a machine that is slower than the tests expect (issue
# 45): scripts/run-tests.sh over the binaries given, twice:
#   1. beside a busy loop on every core (nproc of them), so that the suite's
#      jobs and the programs they start get a share of the CPU only;
#   2. pinned to one core (taskset -c 0: every job, every program it starts
#      and the library's threads take turns on it), without the busy loops.
# A test that waits for a time instead of the state it needs, or whose
# verdict follows the machine's speed, fails here. Each run ends with
# run-tests.sh's own tally; the last lines say how each went.
#   scripts/check-under-load.sh BUILD BINARY...     (make check-under-load)
# LW_UNDER_LOAD_RUNS: which runs, "busy pinned" by default (one of them
# alone to repeat it). The busy loops are this script's own children, ended
# by their ids when it ends.
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD BINARY..." >&2
    exit 2
fi
B=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
runs=${LW_UNDER_LOAD_RUNS:-busy pinned}
cores=$(nproc 2>/dev/null || echo 2)
busy_pids=""

stop_busy() {
    for p in $busy_pids; do
        kill "$p" 2>/dev/null
    done
    for p in $busy_pids; do
        wait "$p" 2>/dev/null
    done
    busy_pids=""
}
trap stop_busy EXIT
trap 'stop_busy; exit 130' INT TERM

summary=""
failed=0
for run in $runs; do
    case $run in
    busy)
        i=0
        while [ "$i" -lt "$cores" ]; do
            sh -c 'while :; do :; done' &
            busy_pids="$busy_pids $!"
            i=$((i + 1))
        done
        echo "check-under-load: the plain suite beside $cores busy loops (one per core)"
        start=$(date +%s)
        "$here/run-tests.sh" "$B" "$@"
        rc=$?
        stop_busy
        ;;
    pinned)
        if ! command -v taskset >/dev/null 2>&1; then
            echo "check-under-load: taskset not found (util-linux): cannot pin the suite to one core" >&2
            exit 1
        fi
        echo "check-under-load: the plain suite pinned to core 0 (taskset -c 0)"
        start=$(date +%s)
        taskset -c 0 "$here/run-tests.sh" "$B" "$@"
        rc=$?
        ;;
    *)
        echo "check-under-load: unknown run '$run' (busy, pinned)" >&2
        exit 2
        ;;
    esac
    secs=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
        word=passed
    else
        word=FAILED
        failed=1
    fi
    summary="${summary}check-under-load: $run: $word in $secs s
"
done
printf '%s' "$summary"
exit "$failed"
