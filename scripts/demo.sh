#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: the product on leakwatch's CPU stand-ins for the CUDA libraries
# (no GPU, no set-up): leakwatch run on a leaking C loop and a leaking Python
# loop, the text report, the HTML report, leakwatch top on a running job, and
# the CI gate (--fail-on-leak).
set -eu
B="${1:-build}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/leakwatch-demo.XXXXXX")
LW="$B/leakwatch"
PY=$(command -v python3 || true)
cd "$OUT"
cp "$ROOT/examples/train_loop.py" "$OUT/"

# Shows a command as a user types it (leakwatch on PATH), then runs it.
show() {
    printf "\n$ %s\n" "$(echo "$*" | sed "s|$LW|leakwatch|g; s|$B/examples/|./|g; s|$OUT/||g; s|${PY:-/nonexistent}|python3|g")"
    "$@"
}
if [ -t 1 ]; then BOLD=$(printf "\033[1m") PLAIN=$(printf "\033[0m"); else BOLD= PLAIN=; fi
title() { printf "\n%s== %s%s\n" "$BOLD" "$*" "$PLAIN"; }

# Each loop sleeps a little per step (--step-us, --step-ms), as a real step
# takes time: the pace, and so the time to out-of-memory the answer gives, is
# then about the same from one run to the next and from one machine to another.
title "1. leakwatch run: a C training loop that keeps each step's loss on the GPU"
echo "   (--cuda-stand-ins: the CPU stand-ins for libcuda.so.1 and libcudart.so, no GPU needed)"
show "$LW" run --cuda-stand-ins --report train_loop.json -- "$B/examples/train_loop" --steps 600 --step-us 2000

if [ -n "$PY" ]; then
    title "2. leakwatch run: the same bug in a Python loop (history.append(loss)), through ctypes"
    show "$LW" run --cuda-stand-ins --report python.json -- "$PY" train_loop.py --steps 300 --step-ms 2
fi

title "3. leakwatch report: the verdict, the growth and the line that leaks"
show "$LW" report --top 2 train_loop.json

# One page per job: given several reports, leakwatch report reads them as the
# ranks of one job, which the C and the Python loops are not.
title "4. leakwatch report --format html: one self-contained page"
show "$LW" report --format html -o report.html train_loop.json
echo "   written: $OUT/report.html (open it in a browser)"

title "5. leakwatch top: a running job, live"
if [ -n "$PY" ]; then
    set -- "$PY" train_loop.py --steps 100000 --step-ms 5
else
    set -- "$B/examples/train_loop" --steps 400000 --step-us 5000
fi
# Given the pid of leakwatch run itself ($!), top follows it to the job.
"$LW" run --cuda-stand-ins -q --report live.json -- "$@" >job.log 2>&1 &
runner=$!
for _ in $(seq 100); do
    "$LW" top --once "$runner" >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 2 # a few samples of the trend
echo "   (leakwatch run ... & started it: \$! is leakwatch run's own pid)"
show "$LW" top --once --sites 2 "$runner" || true
kill -TERM "$runner" 2>/dev/null || true
wait "$runner" 2>/dev/null || true

title "6. The CI gate: --fail-on-leak exits with status 3 when the job leaks"
set +e
if [ -n "$PY" ]; then
    show "$LW" run --cuda-stand-ins --quiet --fail-on-leak -- "$PY" train_loop.py --steps 200
    echo "   exit status $? (leak)"
    show "$LW" run --cuda-stand-ins --quiet --fail-on-leak -- "$PY" train_loop.py --steps 200 --fixed
    echo "   exit status $? (the fixed loop)"
else
    show "$LW" run --cuda-stand-ins --quiet --fail-on-leak -- "$B/examples/train_loop" --steps 200
    echo "   exit status $? (leak)"
    show "$LW" run --cuda-stand-ins --quiet --fail-on-leak -- "$B/examples/train_loop" --steps 200 --leak 0
    echo "   exit status $? (the fixed loop)"
fi
set -e
printf '\nReports and the HTML page are in %s\n' "$OUT"
