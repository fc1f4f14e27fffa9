#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The test counts of several runs, one line each and the sum: what make
# check and .ci/run print at their end. Each FILE holds "PASSED FAILED
# SKIPPED", written by scripts/run-tests.sh ($B/tests/.tally) or
# scripts/check-real.sh; a run whose file is missing, or older than the
# --since file (it was not run this time), is said to be not run.
#   test-tally.sh [--since FILE] LABEL=FILE...
#   tests plain: 359 passed, 0 failed, 2 skipped
#   ...
#   tests in all: 1040 passed, 0 failed, 9 skipped (plain 2, ASan 2, TSan 5)
since=""
if [ "${1:-}" = --since ]; then since=$2; shift 2; fi
tp=0 tf=0 ts=0 per="" notrun=""
for arg in "$@"; do
    label=${arg%%=*} file=${arg#*=}
    if [ ! -f "$file" ] || { [ -n "$since" ] && [ -z "$(find "$file" -newer "$since" 2>/dev/null)" ]; }; then
        echo "tests $label: not run"
        notrun="$notrun, $label"
        continue
    fi
    read -r p f s <"$file"
    echo "tests $label: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
    tp=$((tp + ${p:-0})) tf=$((tf + ${f:-0})) ts=$((ts + ${s:-0}))
    per="$per, $label ${s:-0}"
done
echo "tests in all: $tp passed, $tf failed, $ts skipped${per:+ (${per#, })}${notrun:+; not run: ${notrun#, }}"
