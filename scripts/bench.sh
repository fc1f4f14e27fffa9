#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench: leakwatch's speed and memory benchmarks on the CPU stand-ins.
# Prints numbers; never fails on them (only when a workload cannot run).
#
#   scripts/bench.sh BUILD_DIR
#
# Environment:
#   LW_BENCH_LIB       the shim to measure (default BUILD_DIR/libleakwatch.so)
#   LW_BENCH_ROUNDS    rounds per comparison (default 7, at least 5 advised)
#   LW_BENCH_SECTIONS  sections to run, in order (default: all of
#                      "native floor threads python heaptrack memory report attach
#                      owner realtorch server")
#   LW_BENCH_BASE_LIB  report section: another build of the shim (main's, say)
#                      whose reports are timed in alternation with LW_BENCH_LIB's
#   LW_BENCH_REPORT_SITES  report section: the site counts (default "200 600 10000 100000")
#   LW_BENCH_PYTHONS   interpreters for the Python rows (default: CPython 3.11
#                      and 3.12, from PATH or pyenv; python3 if neither)
#
# Each comparison runs the same workload without and with the shim, in
# alternation (A B A B ...), and reports the added cost per allocation+free
# pair: the median of the per-round differences and their min..max, and the
# median ratio with/without. Two clocks: the process's CPU time (blind to other
# load on the machine; the primary number) and wall time (times the cores in
# use, for threaded runs; it includes lock waits, and other processes' load).
# New sections: add a function section_NAME and its name to SECTIONS.
set -u
set -f # word-split prefixes below, never glob them

B=${1:-build}
B=$(cd "$B" && pwd) || exit 2
LIB=${LW_BENCH_LIB:-$B/libleakwatch.so}
ROUNDS=${LW_BENCH_ROUNDS:-7}
SECTIONS=${LW_BENCH_SECTIONS:-native floor threads python heaptrack memory report attach owner realtorch server}
HERE=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$B/bench/rt_bench
PYBENCH=$HERE/bench/perf/py_bench.py
PYEXT=$B/bench/py_ext.so
STANDINS=$B/tests/lib
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lw-bench.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT

# Both sides of every comparison: the stand-ins on the library path, quiet
# shim, report out of the way.
export LD_LIBRARY_PATH=$STANDINS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SHIM="env LD_PRELOAD=$LIB LEAKWATCH_QUIET=1 LEAKWATCH_REPORT=$TMP/report.json"
BASE="env"

for f in "$LIB" "$BENCH" "$STANDINS/libcudart.so" "$PYEXT"; do
    [ -e "$f" ] || { echo "bench: $f is missing (run through make bench)" >&2; exit 2; }
done

# ---- helpers ----

# find_python X.Y: a working pythonX.Y from PATH or pyenv, or nothing.
find_python() {
    local v=$1 p
    p=$(command -v "python$v" 2>/dev/null) && "$p" -c '' 2>/dev/null && { echo "$p"; return; }
    set +f
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
        [ -x "$p" ] && "$p" -c '' 2>/dev/null && { echo "$p"; set -f; return; }
    done
    set -f
}
PYTHONS=${LW_BENCH_PYTHONS:-$(echo $(find_python 3.11) $(find_python 3.12))}
PYTHONS=${PYTHONS:-python3}

# One run: prints its RESULT line, or fails loudly.
run() {
    local out
    out=$("$@" 2>"$TMP/stderr" | grep '^RESULT') || {
        echo "bench: no result from: $*" >&2
        tail -5 "$TMP/stderr" >&2
        return 1
    }
    echo "$out"
}

# field KEY LINE: the value of KEY=... in a RESULT line.
field() {
    local kv
    for kv in $2; do
        case $kv in "$1="*) echo "${kv#*=}"; return ;; esac
    done
}

# Summary of paired rounds: stdin has "base_cpu shim_cpu base_wall shim_wall"
# per round; prints the formatted columns.
summarise() {
    awk -v goal="$1" -v steady="${2:-}" -v ref="${3:-}" -v showpar="${SHOW_PAR:-}" '
    function median(a, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
    function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
    function q1(a, n,   i, j, t, b) {
        for (i = 1; i <= n; i++) b[i] = a[i]
        for (i = 2; i <= n; i++) { t = b[i]; for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
        return b[int((n + 3) / 4)]
    }
    { n++; row[n] = $0; a1[n] = $1; a2[n] = NF >= 6 ? $6 : $1; bare[2 * n - 1] = a1[n]; bare[2 * n] = a2[n] }
    END {
        if (!n) exit 1
        fast = ref != "" ? ref : q1(bare, 2 * n)
        # A goal row keeps its steady rounds only (goal_row); every other
        # row keeps all of its rounds.
        for (i = 1; i <= n; i++) {
            if (steady && (a1[i] > 1.3 * fast || a2[i] > 1.3 * fast)) { all[++na] = dcof(row[i]); continue }
            split(row[i], f, " ")
            k++; dc[k] = f[2] - f[1]; dw[k] = f[4] - f[3]; bc[k] = f[1]; rc[k] = f[1] > 0 ? f[2] / f[1] : 0; par[k] = f[5]
            all[++na] = dc[k]
        }
        if (!k) { print "no steady round: the machine was never at its steady speed"; print "" > "/dev/stderr"; exit 0 }
        mc = median(dc, k)
        printf "%6.0f [%5.0f..%5.0f]  %6.0f [%5.0f..%5.0f]  %7.0f  %5.2fx", mc, lo(dc, k), hi(dc, k),
               median(dw, k), lo(dw, k), hi(dw, k), median(bc, k), median(rc, k)
        if (goal != "") {
            if (steady && k < 7) printf "  goal <=%s: not judged (%d steady rounds of %d; 7 needed)", goal, k, n
            else printf "  goal <=%s: %s", goal, mc <= goal ? "met" : "NOT met"
        }
        if (steady) printf "  (%d of %d rounds steady; all: %.0f)", k, n, median(all, na)
        if (showpar) printf "  %4.2f", median(par, k)
        printf "\n"
        print mc > "/dev/stderr"
    }
    function dcof(line,   f) { split(line, f, " "); return f[2] - f[1] }' 2>"$TMP/last_median"
}

header() {
    printf '%-44s %-20s  %-20s  %7s  %6s%s\n' "" "added CPU ns/pair" "added wall ns/pair" "base" \
        "with/" "${SHOW_PAR:+  cores}"
    printf '%-44s %-20s  %-20s  %7s  %6s%s\n' "case" "median [min..max]" "median [min..max]" \
        "CPU ns" "w/o" "${SHOW_PAR:+  used}"
}

# ab LABEL GOAL "A-PREFIX" "B-PREFIX" COMMAND...: ROUNDS alternating runs.
ab() {
    local label=$1 goal=$2 pa=$3 pb=$4 r a b
    shift 4
    : >"$TMP/rounds"
    for ((r = 0; r < ROUNDS; r++)); do
        a=$(run $pa "$@") || return 1
        b=$(run $pb "$@") || return 1
        echo "$(field cpu_ns_per_pair "$a") $(field cpu_ns_per_pair "$b")" \
            "$(field ns_per_pair "$a") $(field ns_per_pair "$b") $(field parallel "$b")" \
            >>"$TMP/rounds"
    done
    printf '%-44s ' "$label"
    summarise "$goal" <"$TMP/rounds"
}

last_median() { cat "$TMP/last_median"; }

# ---- sections ----

# The goals' rows (<= 150 ns at 24-32 frames, <= 90 ns counters only, <= 1 ns
# per frame) are judged on the lock-free runtime stand-in
# (bench/perf/fast_cudart.c), in 3x the rounds: on the test stand-ins the bare
# pair costs 1.5-2.5 us and moves by hundreds of ns between runs on a loaded
# machine, more than the whole budget, so their rows show the cost but cannot
# show a goal met or missed.
#
# The machine these numbers come from (a shared 2-core VM) has slow spells,
# from a second to a minute or more, in which every program runs 1.5 to 2
# times slower, the bare one included, with the other core idle
# (docs/cost.md). So the goal rows are measured together, in turns (one round
# of each row, then the next round of each), each round the bare program, the
# shim, the bare program again; a round is "steady" when both of its bare runs
# took at most 1.3 times the fastest bare run of all the goal rows (the bare
# pair: 12-15 ns steady, 18-25 ns in a spell here). A goal is judged on the
# median of its row's steady rounds, 7 of them at least: the turns go on
# until every row has 7 (at least 3x the rounds, at most 12x); the median of
# all the row's rounds is printed beside it.
GOAL_ROWS=(
    "g32|32 frames, lock-free runtime (the goal)|150||-m malloc -f 32 -n 300000"
    "g24|24 frames, lock-free runtime|150||-m malloc -f 24 -n 300000"
    "m32|32 frames, MAX_FRAMES=256, lock-free runtime||LEAKWATCH_MAX_FRAMES=256|-m malloc -f 32 -n 300000"
    "m128|128 frames, MAX_FRAMES=256, lock-free runtime||LEAKWATCH_MAX_FRAMES=256|-m malloc -f 128 -n 300000"
    "floor|counters only, lock-free runtime (the goal)|90|LEAKWATCH_STACKS=0|-m malloc -f 32 -n 300000"
)

# The fastest bare run of the goal rows so far (ns per pair).
goal_fastest() {
    set +f
    cat "$TMP"/goal.*.rounds 2>/dev/null | awk '{ for (i = 1; i <= NF; i += 5) if (NR == 1 && i == 1 || $i < m) m = $i } END { print m + 0 }'
    set -f
}

# Runs the goal rows' rounds, once per bench run (the sections that print
# them call it; the second call finds them done).
goal_phase() {
    local lib=$B/bench/lib row id env args r a b c par min max ref short steady
    [ -e "$TMP/goal.done" ] && return 0
    [ -e "$lib/libcudart.so" ] || return 0
    min=$((ROUNDS * 3))
    max=$((ROUNDS * 12))
    for ((r = 0; r < max; r++)); do
        for row in "${GOAL_ROWS[@]}"; do
            IFS='|' read -r id _ _ env args <<<"$row"
            a=$(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH run $BASE "$BENCH" $args) || return 1
            b=$(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH run $SHIM $env "$BENCH" $args) || return 1
            c=$(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH run $BASE "$BENCH" $args) || return 1
            # bare, shim (CPU), bare, shim (wall), parallel, the second bare
            # (CPU): summarise's columns, and the bare runs at 1 and 6.
            par=$(field parallel "$b")
            echo "$(field cpu_ns_per_pair "$a") $(field cpu_ns_per_pair "$b")" \
                "$(field ns_per_pair "$a") $(field ns_per_pair "$b") ${par:-0}" \
                "$(field cpu_ns_per_pair "$c")" >>"$TMP/goal.$id.rounds"
        done
        [ $((r + 1)) -lt "$min" ] && continue
        ref=$(goal_fastest)
        short=0
        for row in "${GOAL_ROWS[@]}"; do
            IFS='|' read -r id _ <<<"$row"
            steady=$(summarise "" steady "$ref" <"$TMP/goal.$id.rounds" 2>/dev/null |
                sed -n 's/.*(\([0-9]*\) of [0-9]* rounds steady.*/\1/p')
            [ "${steady:-0}" -ge 7 ] || short=1
        done
        [ "$short" = 0 ] && break
    done
    goal_fastest >"$TMP/goal.done"
}

# goal_row ID: prints the goal row ID (GOAL_ROWS) from goal_phase's rounds.
goal_row() {
    local lib=$B/bench/lib row id label goal
    if [ ! -e "$lib/libcudart.so" ]; then
        echo "($lib/libcudart.so missing: the goal's lock-free runtime row skipped)"
        return 0
    fi
    goal_phase || return 1
    for row in "${GOAL_ROWS[@]}"; do
        IFS='|' read -r id label goal _ <<<"$row"
        [ "$id" = "$1" ] || continue
        printf '%-44s ' "$label"
        summarise "$goal" steady "$(cat "$TMP/goal.done")" <"$TMP/goal.$id.rounds"
    done
}

goal_reference_line() {
    [ -e "$TMP/goal.done" ] || return 0
    awk -v f="$(cat "$TMP/goal.done")" 'BEGIN { printf "   steady rounds: both bare runs <= %.1f ns a pair (1.3x the fastest bare run of the goal rows, %.1f ns)\n", 1.3 * f, f }'
}

section_native() {
    local m32 m128
    echo
    echo "== native stacks, 1 thread: cudaMalloc+cudaFree =="
    echo "   the goal (<= 150 ns at 24-32 frames) on the lock-free runtime stand-in, its steady rounds"
    echo "   (the goal rows run in turns, $((ROUNDS * 3)) to $((ROUNDS * 12)) rounds each, until each has 7 steady ones);"
    echo "   the CPU stand-ins' rows after it (bare pair 1.5-2.5 us: too noisy to judge it)"
    header
    goal_row g32
    goal_row g24
    goal_reference_line
    ab "32 frames, cudaMalloc/cudaFree" "" "$BASE" "$SHIM" \
        "$BENCH" -m malloc -f 32 -n 300000
    ab "32 frames, cudaMallocAsync_ptsz/FreeAsync" "" "$BASE" "$SHIM" \
        "$BENCH" -m async -f 32 -n 300000
    ab "8 frames" "" "$BASE" "$SHIM" "$BENCH" -m malloc -f 8 -n 300000
    ab "64 frames (LEAKWATCH_MAX_FRAMES default)" "" "$BASE" "$SHIM" \
        "$BENCH" -m malloc -f 64 -n 300000
    ab "32 frames, LEAKWATCH_MAX_FRAMES=256" "" "$BASE" "$SHIM LEAKWATCH_MAX_FRAMES=256" \
        "$BENCH" -m malloc -f 32 -n 300000
    ab "128 frames, LEAKWATCH_MAX_FRAMES=256" "" "$BASE" "$SHIM LEAKWATCH_MAX_FRAMES=256" \
        "$BENCH" -m malloc -f 128 -n 300000
    # The cost of each further frame, from two lock-free runtime rows (96
    # frames' difference is under 100 ns: the stand-ins' rows cannot show it).
    goal_row m32
    m32=$(last_median)
    goal_row m128
    m128=$(last_median)
    [ -e "$B/bench/lib/libcudart.so" ] && awk -v a="$m32" -v b="$m128" 'BEGIN {
        if (a == "" || b == "") { print "known stack, each frame from 32 to 128:        not judged (no steady rounds)"; exit }
        d = (b - a) / 96
        printf "%-44s %6.2f ns per frame (goal <= 1: %s)\n", "known stack, each frame from 32 to 128:", d,
            d <= 1 ? "met" : "NOT met" }'
    ab "32 frames, LEAKWATCH_STACKS=0 (the floor)" "" "$BASE" "$SHIM LEAKWATCH_STACKS=0" \
        "$BENCH" -m malloc -f 32 -n 300000
    echo "   many call sites in turn (36 frames, same depth): each pair's stack differs"
    echo "   from the last one; 4 fit in the per-thread cache of known stacks, 64 do not"
    header
    ab "4 call sites in turn" "" "$BASE" "$SHIM" \
        "$BENCH" -m alternate -a 4 -f 32 -n 300000
    ab "64 call sites in turn (cache worst case)" "" "$BASE" "$SHIM" \
        "$BENCH" -m alternate -a 64 -f 32 -n 300000
}

# The per-event floor: what the shim adds with stacks off (counters, live
# table, device lookup, hook layers), against the bare run of the same
# invocation, on the test stand-ins and on the lock-free runtime (whose own
# cost is small, so the ratio there is mostly the shim's).
section_floor() {
    echo
    echo "== the floor: counters only (LEAKWATCH_STACKS=0), 32 frames, 1 thread =="
    echo "   the goal (<= 90 ns) on the lock-free runtime stand-in, its steady rounds (section native); the CPU"
    echo "   stand-ins' rows after it (too noisy to judge it: see section native)"
    header
    goal_row floor
    goal_reference_line
    ab "counters only, cudaMalloc/cudaFree" "" "$BASE" "$SHIM LEAKWATCH_STACKS=0" \
        "$BENCH" -m malloc -f 32 -n 300000
    ab "counters only, cudaMallocAsync_ptsz" "" "$BASE" "$SHIM LEAKWATCH_STACKS=0" \
        "$BENCH" -m async -f 32 -n 300000
}

section_threads() {
    local t lib=$B/bench/lib
    local SHOW_PAR=1
    echo
    echo "== threads: 32 frames, cudaMalloc+cudaFree, one call site shared by every thread =="
    echo "   on the test stand-ins: their driver takes one global lock per call, and its"
    echo "   convoys (futex sleep and wake-up) with 8 threads on $(nproc) cores blur the shim's share"
    header
    for t in 1 4 8; do
        ab "$t thread(s), stand-ins" "" "$BASE" "$SHIM" \
            "$BENCH" -m malloc -f 32 -t "$t" -n $((400000 / t))
    done
    if [ ! -e "$lib/libcudart.so" ]; then
        echo "($lib/libcudart.so missing: lock-free runtime rows skipped)"
        return 0
    fi
    echo "   on a lock-free runtime stand-in (bench/perf/fast_cudart.c, about 7 ns a pair):"
    echo "   what grows with threads is the shim's own sharing. \"cores used\": CPU time over wall"
    echo "   time with the shim; near 1 when other processes held a core, and then threads"
    echo "   rarely touch shared cache lines at the same moment (less contention shows)"
    header
    local one=0
    for t in 1 4 8; do
        LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH ab "$t thread(s), lock-free runtime" "" "$BASE" "$SHIM" \
            "$BENCH" -m malloc -f 32 -t "$t" -n $((400000 / t))
        [ "$t" = 1 ] && one=$(last_median)
    done
    awk -v a="$(last_median)" -v b="$one" 'BEGIN {
        if (b > 0) printf "%-44s %.2fx the added CPU cost at 1 thread (goal <= 1.5x: %s)\n",
            "8 threads, added cost per pair:", a / b, a / b <= 1.5 ? "met" : "NOT met" }'
}

# py_goal_rows PYTHON...: the Python-frame goal (<= 250 ns a pair under 20
# Python frames, issue 44), a row for each Python, on the lock-free runtime
# stand-in, the pairs made by C code 8 native frames under one ctypes call
# (py_bench.py, LW_PY_EXT): no ctypes and no stand-in lock in the pair, whose
# bare cost is then 9-17 ns. This machine's speed changes by half from one
# tenth of a second to the next, and stays slow for seconds at times (a bare
# loop alone runs at 9 ns a pair, then 15-17), so runs seconds apart do not
# compare: each process times batches of pairs alternately through the
# runtime's unhooked names (bare) and its hooked ones (LW_PY_INTERLEAVE), and
# each hooked batch is compared with the bare batch next to it, milliseconds
# away. The Pythons take turns, process by process, so that a slow spell
# falls on every row alike. Steady rounds, as in goal_phase: the bare batch
# within 1.3 times the lower quartile of all the rows' bare batches (the
# same C loop in every row), so that a row measured wholly in a slow spell
# is not judged by itself. 3x ROUNDS processes a Python, 10 rounds each.
py_goal_rows() {
    local lib=$B/bench/lib r py out ref
    if [ ! -e "$lib/libcudart.so" ]; then
        echo "($lib/libcudart.so missing: the Python goal's lock-free runtime rows skipped)"
        return 0
    fi
    for py in "$@"; do : >"$TMP/pygoal.$(basename "$py").rounds"; done
    for ((r = 0; r < ROUNDS * 3; r++)); do
        for py in "$@"; do
            out=$(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH LW_PY_INTERLEAVE=10 LW_PY_EXT="$PYEXT" \
                $SHIM "$py" "$PYBENCH" "$lib/libcudart.so" 30000 20 2>"$TMP/stderr" |
                grep '^BATCHES') || {
                echo "bench: no batches from $py $PYBENCH (LW_PY_INTERLEAVE)" >&2
                tail -5 "$TMP/stderr" >&2
                return 1
            }
            # "BATCHES raw=a,b,... hooked=c,d,...": one row a pair of
            # neighbours, in summarise's columns (thread CPU time: the wall
            # columns repeat it).
            echo "$out" | awk '{
                split(substr($2, 5), raw, ","); n = split(substr($3, 8), hk, ",")
                for (i = 1; i <= n; i++) print raw[i], hk[i], raw[i], hk[i], 0, raw[i]
            }' >>"$TMP/pygoal.$(basename "$py").rounds"
        done
    done
    ref=$(for py in "$@"; do cat "$TMP/pygoal.$(basename "$py").rounds"; done |
        awk '{ print $1 }' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 3) / 4)] }')
    for py in "$@"; do
        printf '%-44s ' "Python $(py_version "$py"), 20 Python + 8 C frames (goal)"
        summarise 250 steady "$ref" <"$TMP/pygoal.$(basename "$py").rounds"
    done
    echo "   (steady: bare batch <= 1.3 x ${ref:-?} ns, the lower quartile of all rows' bare batches)"
}

# py_version PYTHON: its X.Y.
py_version() {
    "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'
}

section_python() {
    local py
    echo
    echo "== Python frames: the goal (<= 250 ns a pair under 20 Python frames) =="
    echo "   on the lock-free runtime stand-in, pairs made in C 8 native frames under one ctypes"
    echo "   call, 20 Python frames above it; in each of $((ROUNDS * 3)) processes, 10 batches of"
    echo "   30,000 pairs with leakwatch, each beside a batch without it (the runtime's unhooked"
    echo "   names): a round is such a pair of batches, ns on the thread's CPU clock; steady"
    echo "   rounds: the bare batch within 1.3x the lower quartile of every row's bare batches"
    echo "   (the Pythons take turns, process by process)"
    header
    local found=()
    for py in $PYTHONS; do
        command -v "$py" >/dev/null && found+=("$py")
    done
    [ ${#found[@]} -gt 0 ] && py_goal_rows "${found[@]}"
    echo
    echo "== Python: cudaMalloc/cudaFree through ctypes, 20 Python frames =="
    echo "   (the CPU stand-ins: the bare ctypes pair costs microseconds and moves by hundreds of"
    echo "   ns between runs here: these rows show the cost, they cannot judge the goal)"
    echo "   (ctypes itself is most of the base cost; the native stack under it is the"
    echo "   interpreter's: about 16 frames on 3.11+, 50+ on 3.10 and older)"
    header
    for py in $PYTHONS; do
        if ! command -v "$py" >/dev/null; then
            echo "$py: not found, skipped"
            continue
        fi
        ab "$("$py" -V 2>&1), 20 Python frames" "" "$BASE" "$SHIM" \
            "$py" "$PYBENCH" "$STANDINS/libcudart.so" 100000 20
    done
    echo "   pairs made in C, 8 native frames under one ctypes call, under 30 Python frames"
    echo "   (a C extension's allocations: no ctypes cost per pair)"
    header
    for py in $PYTHONS; do
        command -v "$py" >/dev/null || continue
        ab "Python $(py_version "$py"), 30 Python + 8 C extension frames" "" "$BASE" "$SHIM" \
            env LW_PY_EXT="$PYEXT" "$py" "$PYBENCH" "$STANDINS/libcudart.so" 300000 30
    done
    case " $(for py in $PYTHONS; do "$py" -V 2>&1; done) " in
    *"Python 3.12"*) ;;
    *) echo "(no Python 3.12 found on this machine: its rows are missing)" ;;
    esac
}

section_heaptrack() {
    echo
    echo "== yardstick: host malloc/free, 32 frames, under heaptrack =="
    if ! command -v heaptrack >/dev/null; then
        echo "heaptrack not installed (Debian package heaptrack): skipped"
        return 0
    fi
    echo "   ($(heaptrack --version 2>&1 | head -1); its heaptrack_interpret process runs beside"
    echo "   the program and is not in the program's CPU time; its analysis is not run)"
    header
    ab "heaptrack, 32 frames, malloc/free" "" "$BASE" "heaptrack -o $TMP/heaptrack" \
        "$BENCH" -m host -f 32 -n 300000
}

# json_get FILE KEY.KEY...: a number from the report.
json_get() {
    python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): v = v[k]
print(v)' "$1" "$2"
}

section_memory() {
    local n=1000000 a b rec over
    echo
    echo "== memory: $n live cudaMalloc allocations, one call site =="
    a=$(run $BASE "$BENCH" -m live -f 32 -n $n) || return 1
    b=$(run $SHIM "$BENCH" -m live -f 32 -n $n) || return 1
    rec=$(json_get "$TMP/report.json" tracker.live_records)
    over=$(json_get "$TMP/report.json" tracker.overhead_bytes)
    awk -v n=$n -v a="$(field rss_delta_bytes "$a")" -v b="$(field rss_delta_bytes "$b")" \
        -v rec="$rec" -v over="$over" -v ta="$(field ns_per_alloc "$a")" \
        -v tb="$(field ns_per_alloc "$b")" 'BEGIN {
        printf "report: tracker.overhead_bytes / live_records  %10.1f B per live allocation (%d records)\n", rec ? over / rec : 0, rec
        printf "VmRSS growth, without the shim                %10.1f B per allocation (the stand-in driver)\n", a / n
        printf "VmRSS growth, with the shim                   %10.1f B per allocation\n", b / n
        d = (b - a) / n
        printf "tracker memory (difference)                   %10.1f B per live allocation  goal <=64: %s\n", d, d <= 64 ? "met" : "NOT met"
        printf "allocating them: %.0f ns each without, %.0f ns with the shim\n", ta, tb
    }'
}

# summary of numbers on stdin, one per line: "median [min..max]".
spread() {
    sort -g | awk '{ v[++n] = $1 } END {
        if (!n) { printf "%s", "-"; exit }
        m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        printf "%8.1f [%.1f..%.1f]", m, v[1], v[n] }'
}

# Report writing: leakwatch_dump() with N live call sites, every one written
# (LEAKWATCH_REPORT_SITES=N), REPORTS dumps per run: the first (which starts
# each module's addr2line and names every address) and the later ones (their
# median within the run); ROUNDS runs. The baseline, in the same run: the
# same bytes written by the program itself (stdio, fsync), the I/O floor. With
# LW_BENCH_BASE_LIB (another build of the shim, e.g. main's), its runs
# alternate with this one's and the ratio of the later reports is printed.
# Then concurrent dumps: 4 threads x 150 leakwatch_dump() at once at 600
# sites while a reader reads the file again and again (each read must be a
# whole JSON document), against 600 sequential later reports of the same run.
section_report() {
    local n r lib libs first later io label conc
    local base=${LW_BENCH_BASE_LIB:-}
    libs="$LIB"
    [ -n "$base" ] && libs="$base $LIB"
    echo
    echo "== report writing: leakwatch_dump() with N call sites (written up to the report's 64 MiB: about 12,700 of 100,000); $ROUNDS runs of 4 dumps =="
    printf '%-34s %-22s %-22s %-22s %s\n' "case" "first dump ms" "later dumps ms" \
        "I/O floor ms" "later/floor"
    printf '%-34s %-22s %-22s %-22s %s\n' "" "median [min..max]" "median [min..max]" \
        "median [min..max]" "(median)"
    for n in ${LW_BENCH_REPORT_SITES:-200 600 10000 100000}; do
        : >"$TMP/rep.base"
        : >"$TMP/rep.lib"
        for ((r = 0; r < ROUNDS; r++)); do
            for lib in $libs; do
                out=$(run env LD_PRELOAD=$lib LEAKWATCH_QUIET=1 LEAKWATCH_REPORT=$TMP/report.json \
                    LEAKWATCH_MAX_SITES=200000 LEAKWATCH_REPORT_SITES=$n \
                    "$BENCH" -m sites -f 8 -n $n -r 4) || return 1
                echo "$(field dump_ms "$out") $(field later_ms "$out") $(field io_ms "$out")" \
                    >>"$TMP/rep.$([ "$lib" = "$LIB" ] && echo lib || echo base)"
                rm -f "$TMP/report.json"
            done
        done
        for lib in $libs; do
            f=$TMP/rep.$([ "$lib" = "$LIB" ] && echo lib || echo base)
            label="$n sites$([ "$lib" != "$LIB" ] && echo ", LW_BENCH_BASE_LIB")"
            first=$(cut -d' ' -f1 "$f" | spread)
            later=$(cut -d' ' -f2 "$f" | spread)
            io=$(cut -d' ' -f3 "$f" | spread)
            printf '%-34s %-22s %-22s %-22s %s%s\n' "$label" "$first" "$later" "$io" \
                "$(awk '$3 > 0 { print $2 / $3 }' "$f" | spread | awk '{ printf "%.1fx", $1 }')" \
                "$([ "$n" = 600 ] && [ "$lib" = "$LIB" ] && echo "$later" |
                    awk '{ printf "  goal later <= 50 ms: %s", $1 <= 50 ? "met" : "NOT met" }')"
        done
        if [ -n "$base" ]; then
            paste -d' ' "$TMP/rep.base" "$TMP/rep.lib" | awk '$5 > 0 { print $2 / $5 }' | spread |
                awk -v n=$n '{ printf "%-34s %.1fx faster (median of runs; %s)\n", n " sites, later: base/this", $1, $2 }'
        fi
        [ "$n" = 600 ] && cut -d' ' -f2 "$TMP/rep.lib" | spread | awk '{ print $1 }' >"$TMP/later600"
    done
    echo "   concurrent: 4 threads x 150 leakwatch_dump() at 600 sites, a reader checking every read"
    out=$(run env LD_PRELOAD=$LIB LEAKWATCH_QUIET=1 LEAKWATCH_REPORT=$TMP/report.json \
        LEAKWATCH_REPORT_SITES=600 "$BENCH" -m sites -f 8 -n 600 -r 150 -D 4) || return 1
    conc=$(field concurrent_s "$out")
    awk -v s="$conc" -v per="$(field ms_per_dump "$out")" -v reads="$(field reads "$out")" \
        -v bad="$(field bad_reads "$out")" -v seq="$(cat "$TMP/later600")" 'BEGIN {
        printf "%-34s %.1f s (%.1f ms a dump), %d reads, %d not whole JSON (goal: < 60 s, 0: %s)\n",
            "4 x 150 dumps, 600 sites", s, per, reads, bad, s < 60 && bad == 0 ? "met" : "NOT met"
        if (seq > 0) printf "%-34s %.2fx 600 sequential later dumps (%.1f ms each, above)\n",
            "  against sequential", s * 1000 / (600 * seq), seq }'
    rm -f "$TMP/report.json"
}

# Real PyTorch 2.6 (the real-clients root of make check-real): what leakwatch
# adds to each step, against the bare loop in the same invocation, alternated
# (bench/perf/real_torch.py): a training loop in both PyTorch modes, the same
# loop keeping each loss (the diagnosis window open, its closing step and the
# owner search), and ~1 ms inference requests. LW_REALTORCH_BASE=DIR also runs
# the default mode under another build's DIR/leakwatch (before and after a
# change, in one invocation). LW_REALTORCH_LOOPS="train
# leak infer" picks loops. Needs root (chroot); skipped with the reason where
# the root cannot be had.
section_realtorch() {
    local root
    echo
    echo "== real PyTorch: microseconds added per step, against the bare loop =="
    if ! root=$(sh "$HERE/scripts/setup-real-clients.sh" 2>"$TMP/realtorch.err"); then
        echo "skipped: $(tail -1 "$TMP/realtorch.err")"
        return 0
    fi
    sh "$HERE/scripts/in-real-root.sh" "$root" LW_REALTORCH_LOOPS="${LW_REALTORCH_LOOPS:-}" \
        LW_REALTORCH_BASE="${LW_REALTORCH_BASE:-}" python3 bench/perf/real_torch.py "$ROUNDS"
}

# An inference server that never calls optimizer.step(): each request is a
# step (a call of its outermost nn.Module); its cost per request, bare and
# under leakwatch (bench/perf/real_server.py, real PyTorch 2.6).
section_server() {
    local root
    echo
    echo "== real PyTorch: an inference server's cost per request, bare and under leakwatch =="
    if ! root=$(sh "$HERE/scripts/setup-real-clients.sh" 2>"$TMP/server.err"); then
        echo "skipped: $(tail -1 "$TMP/server.err")"
        return 0
    fi
    sh "$HERE/scripts/in-real-root.sh" "$root" python3 bench/perf/real_server.py "$ROUNDS"
}

# The owner search of the PyTorch helper's diagnosis window (what keeps a
# leak alive): once per run, at the window's close, on the job's thread; its
# cost against the number of kept tensors and autograd nodes, under the
# default budget (bench/perf/owner_bench.py, on the stand-in torch).
section_owner() {
    local py=${PYTHONS%% *} args
    echo
    echo "== owner search (PyTorch helper, once per run at the diagnosis window's close) =="
    echo "   kept tensors in a list, an accumulator's graph, other objects; budget 1000 ms"
    for args in "1000 0 0" "10000 10000 0" "30000 30000 30000"; do
        set -- $args
        printf "%7s kept, %6s graph nodes, %6s other objects: " "$1" "$2" "$3"
        LW_CUDART=$STANDINS/libcudart.so "$py" "$HERE/bench/perf/owner_bench.py" "$1" "$2" "$3" ||
            { echo "bench: owner_bench.py failed" >&2; return 1; }
    done
}

# leakwatch attach: how long the borrowed thread of a running job is stopped
# (the attach's own measure, from PTRACE_INTERRUPT to its release), the whole
# attach and the detach; and the job's run time with an attach and detach in
# the middle against the same job never attached (the baseline, alternated).
section_attach() {
    local prog=$B/tests/programs/rt_attach cli=$B/leakwatch i out pid t0 t1 err
    echo
    echo "== attach: a job on the runtime (300 steps of 10 ms), attached and detached mid-run =="
    [ -x "$prog" ] && [ -x "$cli" ] || { echo "bench: $prog or $cli is missing" >&2; return 1; }
    local scope
    scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
    if [ "$scope" != 0 ] && [ "$(id -u)" != 0 ]; then
        echo "skipped: ptrace_scope is $scope (leakwatch attach would be refused)"
        return 0
    fi
    : >"$TMP/attach.txt"
    for i in $(seq "$ROUNDS"); do
        t0=$(date +%s%N)
        "$prog" 300 10 - >/dev/null 2>&1
        t1=$(date +%s%N)
        base=$(( (t1 - t0) / 1000 ))
        out=$TMP/job.out
        t0=$(date +%s%N)
        "$prog" 300 10 - >"$out" 2>&1 &
        pid=$!
        while ! grep -q ready "$out" 2>/dev/null; do sleep 0.01; done
        sleep 0.3
        err=$("$cli" attach --background -o "$TMP/attach.json" --set interval_ms=100 "$pid" 2>&1) ||
            { echo "bench: attach failed: $err" >&2; kill "$pid"; wait "$pid"; return 1; }
        sleep 0.5
        local d0 d1
        d0=$(date +%s%N)
        "$cli" attach --detach "$pid" >/dev/null 2>&1 || { echo "bench: detach failed" >&2; wait "$pid"; return 1; }
        d1=$(date +%s%N)
        wait "$pid"
        t1=$(date +%s%N)
        echo "$err" | awk -v base="$base" -v job=$(( (t1 - t0) / 1000 )) -v det=$(( (d1 - d0) / 1000 )) '
            /attached to process/ { for (i = 1; i <= NF; i++) { if ($i == "in") ms = $(i + 1); if ($i == "for") us = $(i + 1) } }
            END { print us, ms, det / 1000, base, job }' >>"$TMP/attach.txt"
    done
    sort -n "$TMP/attach.txt" | awk '
        { us[NR] = $1; ms[NR] = $2; det[NR] = $3; r[NR] = $5 / $4 }
        function med(a, n,   t, i, j) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END {
            n = NR; lo = us[1]; hi = us[n]
            printf "thread stopped during the attach   median %8.0f us (min %.0f, max %.0f)\n", med(us, n), lo, hi
            printf "whole attach (checks, ptrace, dlopen, hooks)  median %6.1f ms\n", med(ms, n)
            printf "detach (socket, hooks restored, final report) median %6.1f ms\n", med(det, n)
            printf "job run time, attached and detached mid-run / never attached: median ratio %.3f\n", med(r, n)
        }'
}

# ---- main ----
echo "leakwatch bench: $LIB (tree $(git -C "$HERE" describe --always --dirty 2>/dev/null || echo unknown))"
echo "machine: $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
    "load $(cut -d' ' -f1-3 /proc/loadavg); $ROUNDS rounds per comparison"
load=$(cut -d' ' -f1 /proc/loadavg)
awk -v l="$load" -v c="$(nproc)" 'BEGIN { if (l > c / 2)
    print "note: the machine is busy; wall times will be noisy, CPU times less so" }'
start=$(date +%s)
status=0
for s in $SECTIONS; do
    if ! declare -f "section_$s" >/dev/null; then
        echo "bench: no section $s" >&2
        status=2
        continue
    fi
    "section_$s" || status=1
done
echo
echo "bench: done in $(($(date +%s) - start)) s"
exit $status
