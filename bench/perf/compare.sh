#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares two builds of the shim on one workload: runs it without the shim,
# with LIB_A and with LIB_B, in alternation, and prints each one's added CPU
# ns per pair and the difference B - A (median [min..max] over the rounds).
#
#   bench/perf/compare.sh BUILD_DIR LIB_A LIB_B [ENV=VALUE...] [-- RT_BENCH_ARGS...]
#
# ENV=VALUE pairs are set for both shim runs (LEAKWATCH_STACKS=0, ...).
# RT_BENCH_ARGS default to "-m malloc -f 32 -n 300000". The first argument
# after -- may be "python" to run py_bench.py instead (its arguments follow).
# LW_BENCH_ROUNDS sets the rounds (default 9); LW_BENCH_PYTHON the interpreter
# for "python" (default python3); LW_PY_EXT=BUILD/bench/py_ext.so makes the
# pairs in C under the Python frames (py_bench.py).
set -u
set -f
[ $# -ge 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
A=$2
C=$3
shift 3
envs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs="$envs $1"; shift; done
[ $# -gt 0 ] && shift
HERE=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ] && [ "$1" = python ]; then
    shift
    cmd="${LW_BENCH_PYTHON:-python3} $HERE/py_bench.py $B/tests/lib/libcudart.so $*"
else
    cmd="$B/bench/rt_bench ${*:--m malloc -f 32 -n 300000}"
fi
ROUNDS=${LW_BENCH_ROUNDS:-9}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lw-compare.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
# After any given path, so that LD_LIBRARY_PATH=BUILD/bench/lib selects the
# lock-free runtime stand-in.
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$B/tests/lib
shim() {
    echo "env LD_PRELOAD=$1 LEAKWATCH_QUIET=1 LEAKWATCH_REPORT=$TMP/r.json$envs"
}
cpu() {
    local out kv
    out=$("$@" 2>"$TMP/err" | grep '^RESULT') || { cat "$TMP/err" >&2; exit 1; }
    for kv in $out; do case $kv in cpu_ns_per_pair=*) echo "${kv#*=}" ;; esac; done
}
for ((r = 0; r < ROUNDS; r++)); do
    echo "$(cpu $cmd) $(cpu $(shim "$A") $cmd) $(cpu $(shim "$C") $cmd)"
done >"$TMP/rounds"
echo "workload: $cmd${envs:+ (shim env:$envs)}; $ROUNDS rounds"
awk -v a="$A" -v c="$C" '
function median(x, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
    return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
}
function show(name, x, n,   i, m) {
    m = median(x, n) # sorts x
    printf "%-52s %7.0f [%6.0f..%6.0f] %6.0f %6.0f\n", name, m, x[1], x[n], x[int((n + 3) / 4)], x[n + 1 - int((n + 3) / 4)]
}
{ n++; base[n] = $1; da[n] = $2 - $1; dc[n] = $3 - $1; d[n] = $3 - $2 }
END {
    printf "%-52s %7s %s\n", "", "median", "[min..max] q1 q3, CPU ns per pair"
    show("without the shim", base, n)
    show("added by A: " a, da, n)
    show("added by B: " c, dc, n)
    show("B - A", d, n)
}' "$TMP/rounds"
