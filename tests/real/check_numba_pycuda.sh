#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs Debian trixie's real numba 0.61 and PyCUDA 2025.1 (the real-clients
# root of scripts/setup-real-clients.sh) on the stand-in driver, bare and
# under leakwatch, and checks what leakwatch says:
#   - each leak program runs and its arrays really round-trip (bare);
#   - the leak is named at the helper module's line (numba_mylib.py:16,
#     pycuda_mylib.py:18 or :25), in the warning during the run and as the
#     report's answer;
#   - each --fixed run gives "no leak".
# Needs root (scripts/in-real-root.sh: mount namespace, chroot) and a build
# (make build/libleakwatch.so build/leakwatch, the stand-ins below).
#
#   tests/real/check_numba_pycuda.sh [ROOT]     (default: the user cache's root)
#
# Exit 0 all passed, 1 a check failed, 77 skipped (no root, not root).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=${1:-${LEAKWATCH_REAL_ROOT:-$HOME/.cache/leakwatch/real-clients-amd64/root}}
B=${LW_BUILD:-build}
case $B in /*) ;; *) B=$repo/$B ;; esac
if [ ! -x "$root/usr/bin/python3" ]; then
    echo "check_numba_pycuda: SKIP: no real-clients root at $root (scripts/setup-real-clients.sh)"
    exit 77
fi
if [ "$(id -u)" != 0 ]; then
    echo "check_numba_pycuda: SKIP: needs root (chroot)"
    exit 77
fi
for f in "$B/leakwatch" "$B/libleakwatch.so" "$B/tests/lib/libcuda.so.1" \
    "$B/tests/lib/libcurand.so.10" "$B/tests/lib-cuda12/libcuda.so.1"; do
    [ -e "$f" ] || { echo "check_numba_pycuda: missing $f (make it first)"; exit 1; }
done

# numpy's BLAS is reached through Debian's alternatives (libblas.so.3 ->
# /etc/alternatives/...), which an unpacked root does not have: its folders
# are named here instead.
blas=/usr/lib/x86_64-linux-gnu/blas:/usr/lib/x86_64-linux-gnu/lapack
# numba 0.61's ctypes binding calls what it finds as cuCtxGetDevice_v2 with one
# argument (CUDA 13's takes two): it runs on the CUDA 12.8 variant. PyCUDA
# links plain cuCtxGetDevice and runs on either; it uses the CUDA 13 one.
numba_libs=$B/tests/lib-cuda12:$B/tests/lib:$blas
pycuda_libs=$B/tests/lib:$blas
out=$(mktemp -d /tmp/lw-real.XXXXXX)
trap 'rm -rf "$out"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# run NAME LIBS MODE: runs python3 $script $args (bare, under `leakwatch run`,
# or with LD_PRELOAD); output in $out/NAME.txt, report in $out/NAME.json.
run() {
    name=$1 libs=$2 mode=$3
    set -- PYTHONDONTWRITEBYTECODE=1 "LD_LIBRARY_PATH=$libs"
    case $mode in
    run) set -- "$@" "PYTHONPATH=$repo/python" "LEAKWATCH_REPORT=$out/$name.json" \
        "$B/leakwatch" run -- ;;
    preload) set -- "$@" "PYTHONPATH=$repo/python" "LEAKWATCH_REPORT=$out/$name.json" \
        "LD_PRELOAD=$B/libleakwatch.so" ;;
    esac
    # shellcheck disable=SC2086 # $args: none or one word
    timeout 600 sh "$repo/scripts/in-real-root.sh" "$root" "$@" python3 "$script" $args \
        >"$out/$name.txt" 2>&1
    rc=$?
    echo "---- $name (exit $rc)"
    cat "$out/$name.txt"
    [ $rc = 0 ] || fail "$name exited $rc"
}

# answer NAME: the report's answer (the site it names), "file:line"
answer() {
    python3 -c 'import json,os,sys
r = json.load(open(sys.argv[1]))
w = (r.get("answer") or {}).get("where") or {}
print("%s:%s %s" % (os.path.basename(w.get("file") or "?"), w.get("line"), r.get("verdict")))' \
        "$out/$1.json" 2>/dev/null || echo "no report"
}

expect_line() { # NAME PATTERN
    grep -Eq "$2" "$out/$1.txt" || fail "$1: no line matching '$2'"
}

for mode in bare run preload; do
    script=$repo/tests/real/numba_leak.py args=
    run "numba_leak_$mode" "$numba_libs" "$mode"
    expect_line "numba_leak_$mode" '^steps 300, kept 4915200 B'
    args=--fixed
    run "numba_fixed_$mode" "$numba_libs" "$mode"
    script=$repo/tests/real/pycuda_leak.py args=
    run "pycuda_leak_$mode" "$pycuda_libs" "$mode"
    expect_line "pycuda_leak_$mode" '^steps 300, kept 9830400 B'
    args=--fixed
    run "pycuda_fixed_$mode" "$pycuda_libs" "$mode"
    [ "$mode" = bare ] && continue

    expect_line "numba_leak_$mode" '^leakwatch: LEAK in numba_mylib\.py:16 in stash: \+16\.[0-9] KiB/step'
    a=$(answer "numba_leak_$mode")
    [ "$a" = "numba_mylib.py:16 leak" ] || fail "numba_leak_$mode: report answer '$a'"
    expect_line "numba_fixed_$mode" '^leakwatch: no leak'
    expect_line "pycuda_leak_$mode" '^leakwatch: LEAK in pycuda_mylib\.py:(18|25) in stash_'
    a=$(answer "pycuda_leak_$mode")
    case $a in "pycuda_mylib.py:18 leak" | "pycuda_mylib.py:25 leak") ;;
    *) fail "pycuda_leak_$mode: report answer '$a'" ;; esac
    expect_line "pycuda_fixed_$mode" '^leakwatch: no leak'
done

if [ $failures != 0 ]; then
    echo "check_numba_pycuda: $failures check(s) failed"
    exit 1
fi
echo "check_numba_pycuda: all passed"
