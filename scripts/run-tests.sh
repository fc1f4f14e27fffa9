#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs each test binary given, with LW_BUILD set to the build folder, and
# fails if any fails. Each binary prints Check's own summary line. With
# LW_TEST_EXEC set (make check-aarch64: qemu-user), each runs through it.
#
# LW_TEST_JOBS binaries run at once: by default one more than the cores (3
# on 2 cores), as most binaries spend most of their time waiting on the
# programs they start, not computing (the plain suite: 116 s of CPU in
# 450 s of binaries' wall time; test_attach alone 156 s wall for 14 s CPU),
# so that a third keeps the two cores busy. Each binary's output,
# stdout and stderr together, is printed in one piece when it ends (with one
# job, as it runs), followed by "== NAME: passed|FAILED in N.N s". The tally
# below is the same whatever the job count: it is counted from the kept
# outputs in the order the binaries were given. The binaries named in ALONE
# below run after the others, one at a time, with nothing else of the suite
# beside them. The queue starts with the binaries that took longest last
# time in this build folder ($B/tests/.durations), so that two jobs end
# together; a binary this folder has no time for yet (a fresh build, as in
# CI) takes its time from the tracked seed, LW_TEST_SEED (default
# tests/durations: seconds measured on 2 cores; check-aarch64 passes
# tests/durations-aarch64).
#
# Check has no "skipped" status: a test that cannot run a case here prints a
# line with "skipped" in it and passes. This script collects those lines
# (each distinct line once per binary) and ends with a tally:
#   tests: 22 binaries: 22 passed, 0 failed; 417 checks; 3 skips:
#     test_layouts: ... skipped
#   417 passed, 0 failed, 3 skipped
# The last line, alone, is the form CI reads ("passed" and "failed" count
# Check's tests; "skipped" counts the skip lines, parts of passed tests).
# With CI=true (or CI=1), a skip of something CI is supposed to have
# (required_skip below: what scripts/install-deps.sh test installs or
# unpacks) fails the run.
B="$1"; shift
export LW_BUILD="$B"
cores=$(nproc 2>/dev/null || echo 2)
jobs=${LW_TEST_JOBS:-$((cores + 1))}
case "$jobs" in '' | *[!0-9]* | 0) echo "run-tests: LW_TEST_JOBS must be a number >= 1, not '$jobs'" >&2; exit 2 ;; esac
# Binaries that run alone, and why (add a name with its reason; LW_TEST_ALONE
# replaces the list):
#   test_answer: drives leakwatch top in tmux and reads live warnings within
#     a run, both paced by the wall clock; on this loaded 2-core machine it
#     failed once in a serial run (top's last screen) and once beside
#     another binary (a verdict withdrawn late in the run), so it runs with
#     none of the suite's own load beside it. Every other binary passed
#     the whole plain suite twice at 2 jobs, and the plain and ASan suites
#     at 3 jobs on 2 cores under a load average of 4 to 8 (but ASan's
#     test_torch case jobs_own_leakwatch_module_is_its_own, which failed
#     the same way at 2 jobs).
ALONE=${LW_TEST_ALONE-"test_answer"}
tmp=$(mktemp -d /tmp/lwtests.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Prints what CI lacks when a skip line says a required component is
# missing; nothing otherwise.
required_skip() {
    case "$1" in
    *"CPython 3.14 is not unpacked"*) echo "CPython 3.14 (sh scripts/setup-python314.sh)" ;;
    *"libcuda1 and libcudart11.0 are not unpacked"*) echo "NVIDIA's Debian libraries (sh scripts/setup-nvidia-debian.sh)" ;;
    *"chromium is not installed"*) echo "chromium (Debian package chromium)" ;;
    *"no CPython >= 3.8 found"* | *"no CPython found"* | *"no python3"* | *"no /usr/bin/python3"* | \
        *"python3 is not installed"*) echo "python3 (Debian package python3)" ;;
    *"no addr2line"*) echo "addr2line (Debian package binutils)" ;;
    *"tmux is not installed"*) echo "tmux (Debian package tmux)" ;;
    *"no script(1)"*) echo "script (Debian package bsdutils)" ;;
    esac
}
case "${CI:-}" in "" | 0 | false | no) in_ci=0 ;; *) in_ci=1 ;; esac

now_ms() { # milliseconds since the epoch (GNU date's %N)
    ns=$(date +%s%N)
    case "$ns" in *N) echo $(($(date +%s) * 1000)) ;; *) echo $((ns / 1000000)) ;; esac
}

secs() { # milliseconds as seconds, one decimal
    echo "$(($1 / 1000)).$(($1 % 1000 / 100))"
}
# The children's user plus system time in the output of `times` (its second
# line, "0m1.230000s 0m0.040000s"), in milliseconds; 0 when unreadable.
cpu_ms() {
    sed -n '2s/^\([0-9]*\)m\([0-9.]*\)s \([0-9]*\)m\([0-9.]*\)s$/\1 \2 \3 \4/p' "$1" 2>/dev/null |
        awk '{ c = int((($1 * 60) + $2 + ($3 * 60) + $4) * 1000 + 0.5) } END { print c + 0 }'
}

# One binary: INDEX, then its output in out.INDEX, its status in rc.INDEX,
# its milliseconds in ms.INDEX. LIVE=1 shows the output as it comes.
run_one() {
    i=$1 t=$2 live=$3
    s=$(now_ms)
    # The subshell's `times` (its children's user and system time) is the
    # binary's CPU time, its own children's included.
    if [ "$live" = 1 ]; then
        # shellcheck disable=SC2086
        ($LW_TEST_EXEC "$t" 2>&1; echo $? >"$tmp/rc.$i"; times >"$tmp/cpu.$i") | tee "$tmp/out.$i"
    else
        # shellcheck disable=SC2086
        ($LW_TEST_EXEC "$t" 2>&1; echo $? >"$tmp/rc.$i"; times >"$tmp/cpu.$i") >"$tmp/out.$i"
    fi
    ms=$(($(now_ms) - s))
    echo "$ms" >"$tmp/ms.$i"
    cpu=$(cpu_ms "$tmp/cpu.$i")
    echo "$cpu" >"$tmp/cpums.$i"
    rc=$(cat "$tmp/rc.$i" 2>/dev/null || echo 1)
    verdict=passed
    [ "$rc" -eq 0 ] || verdict="FAILED (status $rc)"
    line="== ${t##*/}: $verdict in $(secs "$ms") s ($(secs "$cpu") s CPU)"
    if [ "$live" = 1 ]; then
        echo "$line"
    else
        # One block per binary: the lock keeps two jobs' outputs apart.
        { flock 9 2>/dev/null; cat "$tmp/out.$i"; echo "$line"; } 9>"$tmp/print.lock"
    fi
}

# The queue: index and path, one a line, longest last time first; the
# binaries in ALONE apart.
durations="$B/tests/.durations"
seed=${LW_TEST_SEED-"$(dirname "$0")/../tests/durations"}
i=0
: >"$tmp/queue"
: >"$tmp/alone"
for t in "$@"; do
    i=$((i + 1))
    name=${t##*/}
    prev=$(awk -v n="$name" '$1 == n { print $2 }' "$durations" 2>/dev/null | tail -1)
    # The seed is in seconds (the kept times are in milliseconds).
    [ -n "$prev" ] || prev=$(awk -v n="$name" '$1 == n { print int($2 * 1000) }' "$seed" 2>/dev/null | tail -1)
    case " $ALONE " in
    *" $name "*) echo "$i $t" >>"$tmp/alone" ;;
    *) echo "${prev:-0} $i $t" >>"$tmp/queue" ;;
    esac
done
sort -k1,1nr -k2,2n "$tmp/queue" | cut -d' ' -f2- >"$tmp/order"

if [ "$jobs" -eq 1 ]; then
    while read -r i t; do run_one "$i" "$t" 1; done <"$tmp/order"
else
    # Each job takes the next binary no other job has claimed (mkdir is
    # atomic), until the queue is done.
    j=0
    while [ $j -lt "$jobs" ]; do
        j=$((j + 1))
        (
            while read -r i t; do
                mkdir "$tmp/claim.$i" 2>/dev/null || continue
                run_one "$i" "$t" 0
            done <"$tmp/order"
        ) &
    done
    wait
fi
while read -r i t; do
    [ "$jobs" -eq 1 ] || echo "run-tests: ${t##*/} runs alone"
    run_one "$i" "$t" 1
done <"$tmp/alone"

nbin=0 nfail=0 failed="" passed_checks=0 failed_checks=0
: >"$tmp/skips"
: >"$tmp/failures"
: >"$tmp/times"
i=0
for t in "$@"; do
    i=$((i + 1))
    nbin=$((nbin + 1))
    name=${t##*/}
    out="$tmp/out.$i"
    [ -f "$out" ] || : >"$out"
    rc=$(cat "$tmp/rc.$i" 2>/dev/null || echo 1)
    echo "$name $(cat "$tmp/ms.$i" 2>/dev/null || echo 0) $(cat "$tmp/cpums.$i" 2>/dev/null || echo 0)" >>"$tmp/times"
    # Check's summary: "100%: Checks: 27, Failures: 0, Errors: 0".
    summary=$(sed -n 's/^[0-9]*%: Checks: \([0-9]*\), Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2 \3/p' \
        "$out" | tail -1)
    n=0 f=0 e=0
    [ -z "$summary" ] || read -r n f e <<EOF_SUMMARY
$summary
EOF_SUMMARY
    passed_checks=$((passed_checks + n - f - e))
    failed_checks=$((failed_checks + f + e))
    if [ "$rc" -ne 0 ]; then
        nfail=$((nfail + 1)); failed="$failed $name"
        # A binary that died before its summary, or failed after it (a
        # sanitizer at exit), is one failed test more.
        [ $((f + e)) -gt 0 ] || failed_checks=$((failed_checks + 1))
        # Kept for the end, where a CI log's tail shows them: Check's
        # failure lines, or the binary's last lines when it has none.
        {
            echo "--- $name:"
            grep -E ':[FE]:|ERROR: AddressSanitizer|runtime error:|ThreadSanitizer' "$out" |
                head -20 >"$tmp/flines"
            if [ -s "$tmp/flines" ]; then cat "$tmp/flines"; else tail -15 "$out"; fi
        } >>"$tmp/failures"
    fi
    grep -i 'skipped' "$out" | grep -v '^[0-9]*%: Checks:' | awk '!seen[$0]++' |
        sed "s|^|$name	|" >>"$tmp/skips"
done
# For the next run's queue (best effort: a read-only build folder keeps none).
if [ -d "$B/tests" ]; then
    { cut -d' ' -f1,2 "$tmp/times"; cat "$durations" 2>/dev/null; } | awk '!seen[$1]++' >"$durations.tmp" 2>/dev/null &&
        mv "$durations.tmp" "$durations" 2>/dev/null
fi

nskip=$(wc -l <"$tmp/skips" | tr -d ' ')
status=0
[ $nfail -eq 0 ] || status=1
list=""
[ "$nskip" -eq 0 ] || list=":"
echo "seconds per binary, slowest first ($jobs at once; wall/CPU):" \
    "$(sort -k2,2nr "$tmp/times" | awk '{ printf "%s%s %.1f/%.1f", sep, $1, $2 / 1000, $3 / 1000; sep = ", " }')"
echo "time: $(awk '{ c += $3 } END { printf "%.1f", c / 1000 }' "$tmp/times") s CPU (user and system) in all"
echo "tests: $nbin binaries: $((nbin - nfail)) passed, $nfail failed${failed:+ (${failed# })};" \
    "$((passed_checks + failed_checks)) checks; $nskip skips$list"
missing=""
while IFS='	' read -r bin line; do
    case "$line" in "$bin"*) echo "  $line" ;; *) echo "  $bin: $line" ;; esac
    if [ $in_ci = 1 ]; then
        need=$(required_skip "$line")
        if [ -n "$need" ]; then
            echo "  ^ FAILED under CI: CI is supposed to have $need"
            missing="$missing; $need"
            status=1
        fi
    fi
done <"$tmp/skips"
if [ -n "$missing" ]; then echo "tests: FAILED under CI: skipped for want of${missing#;}" >&2; fi
if [ $nfail -ne 0 ]; then
    echo "what failed:"
    cut -c1-600 "$tmp/failures"
    echo "FAILED:$failed" >&2
fi
echo "$passed_checks passed, $failed_checks failed, $nskip skipped"
# The same counts for scripts/test-tally.sh (make check's and .ci/run's
# summary over the build flavours).
[ ! -d "$B/tests" ] || echo "$passed_checks $failed_checks $nskip" >"$B/tests/.tally" 2>/dev/null || true
exit $status
