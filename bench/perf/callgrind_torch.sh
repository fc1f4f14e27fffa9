#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions leakwatch adds to a step of real PyTorch 2.6, counted by
# valgrind's callgrind: the steady measure beside make bench's realtorch rows,
# whose times move by tens of microseconds between runs on a shared machine.
#
#   bench/perf/callgrind_torch.sh BUILD_DIR
#
# The loop is bench/perf/real_torch.py's training loop (Linear/ReLU/Adam/
# CrossEntropy, batch 64) on the CPU stand-ins, inside the real-clients root
# (scripts/setup-real-clients.sh). Each run is a process under callgrind with
# its instrumentation off until the warm-up is done (real_torch.py's
# LW_REALTORCH_CALLGRIND); the process ends at the last counted step, so
# neither start-up nor exit is counted. Runs:
#   train   50 steps of warm-up, 200 counted: bare, default, and tensors
#           against bare on its own backend (bare-async)
#   steady  2,000 steps of warm-up, 200 counted: the same four runs
# For each run, from callgrind's per-thread counts: the instructions per
# step of the job's threads (the loop's and PyTorch's autograd engine's) and
# of leakwatch's worker thread. The job's figure is what a step pays. The
# worker's is printed apart and is not comparable with a real run: its work
# is partly driven by the clock (ticks, intervals, a report every minute),
# and callgrind runs the job about 50 times slower, so per step it does more
# of that work than it would.
#
# Environment: LW_CG_PARTS=1 also prints, per leakwatch run, the functions
# whose own instructions on the job's threads grew most over the bare run;
# LW_CG_LOOPS ("train steady"); LW_CG_MODES (e.g. "bare default": some of the
# runs only); LW_CG_KEEP=DIR keeps the callgrind files.
# About 2 minutes for train and 4 for steady on an idle core of this
# project's machine; needs root (the real-clients root is entered with
# mount and chroot), valgrind and its headers (valgrind/callgrind.h).
set -u
B=${1:?usage: callgrind_torch.sh BUILD_DIR}
B=$(cd "$B" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LOOPS=${LW_CG_LOOPS:-train steady}
case "$B" in "$HERE"/*) ;; *)
    echo "callgrind_torch: BUILD_DIR must lie inside this checkout (the real-clients root sees only it and /tmp)" >&2
    exit 2 ;;
esac
vg=$(command -v valgrind) || { echo "callgrind_torch: valgrind is not installed" >&2; exit 2; }
# Debian's valgrind is a shell script around valgrind.bin.
[ -x "$vg.bin" ] && vg=$vg.bin
vglib=
for d in /usr/libexec/valgrind /usr/lib/x86_64-linux-gnu/valgrind /usr/lib/valgrind /usr/local/libexec/valgrind; do
    [ -e "$d/callgrind-amd64-linux" ] && { vglib=$d; break; }
done
[ -n "$vglib" ] || { echo "callgrind_torch: valgrind's tool directory (callgrind-amd64-linux) not found" >&2; exit 2; }
for f in "$B/libleakwatch.so" "$B/tests/lib/libcudart.so"; do
    [ -e "$f" ] || { echo "callgrind_torch: $f is missing (make all test-bins)" >&2; exit 2; }
done
root=$(sh "$HERE/scripts/setup-real-clients.sh") || { echo "callgrind_torch: no real-clients root" >&2; exit 2; }
# Under /tmp: the only place outside the checkout the root sees.
TMP=$(mktemp -d /tmp/lw-cgt.XXXXXX) || exit 2
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/vg/bin"
cp "$vg" "$TMP/vg/bin/valgrind" && cp -r "$vglib" "$TMP/vg/lib" || exit 2
cat >"$TMP/cgctl.c" <<'EOF'
#include <valgrind/callgrind.h>
void lw_cg_start(void) {
    CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_ZERO_STATS;
}
EOF
${CC:-cc} -O2 -shared -fPIC -o "$TMP/cgctl.so" "$TMP/cgctl.c" ||
    { echo "callgrind_torch: cannot build the client-request library (valgrind/callgrind.h)" >&2; exit 2; }
OUT=${LW_CG_KEEP:-$TMP/out}
mkdir -p "$OUT"

# run NAME LOOP STEPS MODE: one process under callgrind.
run() {
    local name=$1 loop=$2 steps=$3 mode=$4 d=$OUT/$1
    local env=(LD_LIBRARY_PATH="$B/tests/lib" PYTHONHASHSEED=0 LEAKWATCH_QUIET=1
        VALGRIND_LIB="$TMP/vg/lib" LW_REALTORCH_CALLGRIND="$TMP/cgctl.so")
    rm -rf "$d" && mkdir -p "$d"
    case $mode in
    bare-async) env+=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync) ;;
    default | tensors)
        env+=(LD_PRELOAD="$B/libleakwatch.so" LEAKWATCH_REPORT="$d/report.json")
        [ "$mode" = tensors ] && env+=(LEAKWATCH_TORCH_MODE=tensors) ;;
    esac
    (cd "$HERE" && sh scripts/in-real-root.sh "$root" "${env[@]}" "$TMP/vg/bin/valgrind" \
        --tool=callgrind --instr-atstart=no --separate-threads=yes \
        --callgrind-out-file="$d/cg.out" python3 bench/perf/real_torch.py --loop "$loop" "$steps") \
        >"$d/log" 2>&1 || { echo "callgrind_torch: $name failed:" >&2; tail -5 "$d/log" >&2; return 1; }
}

for loop in $LOOPS; do
    case $loop in
    train) modes="bare default bare-async tensors" ;;
    steady) modes="bare default bare-async tensors" ;;
    *) echo "callgrind_torch: unknown loop $loop" >&2; exit 2 ;;
    esac
    [ -n "${LW_CG_MODES:-}" ] && modes=$LW_CG_MODES
    # Two at a time: one per core of this project's machine.
    set -- $modes
    while [ $# -gt 0 ]; do
        run "$loop-$1" "$loop" 200 "$1" &
        [ $# -gt 1 ] && run "$loop-$2" "$loop" 200 "$2" &
        wait
        shift; [ $# -gt 0 ] && shift
    done
done
python3 "$HERE/bench/perf/callgrind_torch_table.py" "$OUT" 200 $LOOPS
