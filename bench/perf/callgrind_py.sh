#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions the shim adds per cudaMalloc+cudaFree pair under Python frames,
# counted by valgrind's callgrind (steady where the timed rows are not: the
# bare ctypes pair costs microseconds and moves by hundreds of ns).
#
#   bench/perf/callgrind_py.sh BUILD_DIR [PYTHON ...]
#
# For each interpreter (default: CPython 3.12 and 3.11 from PATH or pyenv) and
# each workload (ctypes: 20 Python frames, each pair two ctypes calls; ext: the
# pairs made by C code, 8 native frames under one ctypes call, 30 Python
# frames; ext20: the same under 20 Python frames, as make bench's goal row),
# runs bench/perf/py_bench.py under callgrind with N1 and N2 pairs, bare and
# with the shim preloaded (PYTHONHASHSEED=0), and prints
#   (shim(N2) - shim(N1) - bare(N2) + bare(N1)) / (N2 - N1)
# so that start-up, import and the report cancel out. Only the thread that
# makes the pairs is counted (callgrind --separate-threads, its first file):
# the library's own threads (the sampler) work by the clock, and callgrind's
# slowdown of about 50 times stretches the clock, so their share would grow
# with the run's wall time (a few hundred instructions a pair on a loaded
# machine). With LW_CG_PARTS=1 it
# also prints where the added instructions go, by part of the path and by
# function (bench/perf/callgrind_parts.py: each function's own instructions,
# the same difference).
#
# Environment: LW_CG_N1, LW_CG_N2 (default 10000, 20000), LW_BENCH_LIB (the
# shim; default BUILD_DIR/libleakwatch.so), LW_CG_WORKLOADS ("ctypes ext"),
# LW_CG_PARTS=1, LW_CG_KEEP=DIR keeps the callgrind.out files there,
# LW_CG_RUNTIME=lockfree makes the pairs on the lock-free runtime stand-in
# (BUILD/bench/lib, bench/perf/fast_cudart.c: no driver call under the runtime,
# as the timed goal rows of make bench) instead of the test stand-ins. About a
# minute a workload on an idle core.
set -u
B=${1:?usage: callgrind_py.sh BUILD_DIR [PYTHON ...]}
shift
B=$(cd "$B" && pwd) || exit 2
HERE=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${LW_BENCH_LIB:-$B/libleakwatch.so}
N1=${LW_CG_N1:-10000}
N2=${LW_CG_N2:-20000}
WORKLOADS=${LW_CG_WORKLOADS:-ctypes ext}
PYBENCH=$HERE/bench/perf/py_bench.py
PYEXT=$B/bench/py_ext.so
STANDINS=$B/tests/lib
RUNTIME=$STANDINS/libcudart.so
LIBPATH=$STANDINS
if [ "${LW_CG_RUNTIME:-}" = lockfree ]; then
    RUNTIME=$B/bench/lib/libcudart.so
    LIBPATH=$B/bench/lib:$STANDINS
fi
command -v valgrind >/dev/null || { echo "callgrind_py: valgrind is not installed" >&2; exit 2; }
for f in "$LIB" "$RUNTIME" "$PYEXT"; do
    [ -e "$f" ] || { echo "callgrind_py: $f is missing (make all test-bins $B/bench/py_ext.so)" >&2; exit 2; }
done
TMP=${LW_CG_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/lw-cg.XXXXXX")} || exit 2
mkdir -p "$TMP"
[ -n "${LW_CG_KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT

find_python() {
    local v=$1 p
    p=$(command -v "python$v" 2>/dev/null) && "$p" -c '' 2>/dev/null && { echo "$p"; return; }
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
        [ -x "$p" ] && "$p" -c '' 2>/dev/null && { echo "$p"; return; }
    done
}
if [ $# -eq 0 ]; then
    set -- $(find_python 3.12) $(find_python 3.11)
    [ $# -gt 0 ] || set -- python3
fi

# run TAG N [env...] -- cmd: one callgrind run; its output file is $TMP/TAG.N
cg() {
    local tag=$1 n=$2
    shift 2
    env PYTHONHASHSEED=0 LD_LIBRARY_PATH="$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@" \
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$TMP/$tag.$n.all" \
        "$PY" "$PYBENCH" "$RUNTIME" "$n" "$FRAMES" 200 >"$TMP/$tag.$n.log" 2>&1 || {
        echo "callgrind_py: the run $tag $n failed:" >&2
        tail -5 "$TMP/$tag.$n.log" >&2
        return 1
    }
    # The first thread's file: the interpreter's main thread, which makes the pairs.
    mv "$TMP/$tag.$n.all-01" "$TMP/$tag.$n" && rm -f "$TMP/$tag.$n.all"*
}
total() { sed -n 's/^summary: *//p;s/^totals: *//p' "$1" | head -1 | awk '{print $1}'; }

for PY in "$@"; do
    # The interpreter itself, not a wrapper script (pyenv's shims): callgrind
    # follows no child process.
    PY=$("$PY" -c 'import sys; print(sys.executable)') || continue
    v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || continue
    for w in $WORKLOADS; do
        case $w in
        ctypes) FRAMES=20; EXTRA="" ;;
        ext) FRAMES=30; EXTRA="LW_PY_EXT=$PYEXT" ;;
        ext20) FRAMES=20; EXTRA="LW_PY_EXT=$PYEXT" ;; # make bench's Python goal row
        *) echo "callgrind_py: unknown workload $w" >&2; exit 2 ;;
        esac
        t="$v-$w"
        cg "$t-bare" "$N1" $EXTRA && cg "$t-bare" "$N2" $EXTRA &&
            cg "$t-shim" "$N1" $EXTRA LD_PRELOAD="$LIB" LEAKWATCH_QUIET=1 LEAKWATCH_REPORT="$TMP/r.json" &&
            cg "$t-shim" "$N2" $EXTRA LD_PRELOAD="$LIB" LEAKWATCH_QUIET=1 LEAKWATCH_REPORT="$TMP/r.json" ||
            continue
        b1=$(total "$TMP/$t-bare.$N1") b2=$(total "$TMP/$t-bare.$N2")
        s1=$(total "$TMP/$t-shim.$N1") s2=$(total "$TMP/$t-shim.$N2")
        if [ -z "$b1" ] || [ -z "$b2" ] || [ -z "$s1" ] || [ -z "$s2" ]; then
            echo "callgrind_py: no instruction count from a run of $PY ($t)" >&2
            continue
        fi
        awk -v v="$v" -v w="$w" -v f="$FRAMES" -v b1="$b1" -v b2="$b2" -v s1="$s1" -v s2="$s2" \
            -v n="$((N2 - N1))" 'BEGIN { printf "Python %s %-6s %2d frames: bare %6.0f, shim %6.0f, added %5.0f instructions a pair\n",
                v, w, f, (b2 - b1) / n, (s2 - s1) / n, (s2 - s1 - b2 + b1) / n }'
        if [ "${LW_CG_PARTS:-0}" = 1 ]; then
            python3 "$HERE/bench/perf/callgrind_parts.py" "$((N2 - N1))" "$TMP/$t-bare.$N1" \
                "$TMP/$t-bare.$N2" "$TMP/$t-shim.$N1" "$TMP/$t-shim.$N2"
        fi
    done
done
