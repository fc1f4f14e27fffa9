#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-accuracy: the leak detector's accuracy on the corpus of simulated
# training jobs (bench/accuracy/corpus.txt), run through the shim on the CPU
# stand-ins. Prints a per-workload table, a confusion matrix and one summary
# line ("accuracy: N workloads, FP x, FN y, ..."). Never fails on the numbers;
# fails when a workload crashes or writes no report.
#
#   scripts/bench-accuracy.sh [BUILD_DIR [score.py options]]
#       e.g. scripts/bench-accuracy.sh build --only 'leak_1|noise' --keep /tmp/acc -v
set -u
B=${1:-build}
[ $# -gt 0 ] && shift
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || { echo "bench-accuracy: $PY not found (Python 3 needed)" >&2; exit 2; }
exec "$PY" "$HERE/bench/accuracy/score.py" --build "$B" "$@"
