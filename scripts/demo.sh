#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make demo: the product on leakwatch's CPU stand-ins for the CUDA libraries
# (no GPU, no set-up): leakwatch run on a leaking C loop and a leaking Python
# loop, the text report, the HTML report, leakwatch top on a running job, and
# the CI gate (--fail-on-leak).
# Every command is printed as it must be typed in the clone, then run from
# that text (eval), from the clone's root: what the demo shows works when
# pasted, in order (tests/scripts/test-demo.sh pastes them into a fresh shell).
# Its files go to build/demo/.
set -eu
B="${1:-build}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd)
cd "$ROOT"
# The build folder as typed from the clone's root (build, unless B is elsewhere).
case "$B" in
"$ROOT"/*) RB=${B#"$ROOT"/} ;;
*) RB=$B ;;
esac
D="$RB/demo"
mkdir -p "$D"
PY=$(command -v python3 || true)

if [ -t 1 ]; then BOLD=$(printf "\033[1m") PLAIN=$(printf "\033[0m"); else BOLD= PLAIN=; fi
title() { printf "\n%s== %s%s\n" "$BOLD" "$*" "$PLAIN"; }
# Shows a command exactly as a user types it, then runs that text (its
# status is the test's to check: the gate's 3 is no failure of the demo).
show() {
    printf '\n$ %s\n' "$1"
    eval "$1" || :
}

title "0. leakwatch is $RB/leakwatch: put it on PATH (pip install . puts it there for good)"
show "export PATH=\"\$PWD/$RB:\$PATH\""

# Each loop sleeps a little per step (--step-us, --step-ms), as a real step
# takes time: the pace, and so the time to out-of-memory the answer gives, is
# then about the same from one run to the next and from one machine to another.
title "1. leakwatch run: a C training loop that keeps each step's loss on the GPU"
echo "   (--cuda-stand-ins: the CPU stand-ins for libcuda.so.1 and libcudart.so, no GPU needed)"
show "leakwatch run --cuda-stand-ins --report $D/train_loop.json -- $RB/examples/train_loop --steps 600 --step-us 2000"

if [ -n "$PY" ]; then
    title "2. leakwatch run: the same bug in a Python loop (history.append(loss)), through ctypes"
    show "leakwatch run --cuda-stand-ins --report $D/python.json -- python3 examples/train_loop.py --steps 300 --step-ms 2"
fi

title "3. leakwatch report: the verdict, the growth and the line that leaks"
show "leakwatch report --top 2 $D/train_loop.json"

# One page per job: given several reports, leakwatch report reads them as the
# ranks of one job, which the C and the Python loops are not.
title "4. leakwatch report --format html: one self-contained page"
show "leakwatch report --format html -o $D/report.html $D/train_loop.json"
echo "   (open $D/report.html in a browser)"

title "5. leakwatch top: a running job, live"
if [ -n "$PY" ]; then
    job="python3 examples/train_loop.py --steps 100000 --step-ms 5"
else
    job="$RB/examples/train_loop --steps 400000 --step-us 5000"
fi
echo "   (\$! is leakwatch run's own pid: top follows it to the job)"
show "leakwatch run --cuda-stand-ins -q --report $D/live.json -- $job >$D/job.log 2>&1 &"
runner=$!
for _ in $(seq 100); do
    leakwatch top --once "$runner" >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 2 # a few samples of the trend
show "leakwatch top --once --sites 2 \$!"
show "kill \$!"
wait "$runner" 2>/dev/null || :

title "6. The CI gate: --fail-on-leak exits with status 3 when the job leaks, 5 when it cannot tell"
if [ -n "$PY" ]; then
    loop="python3 examples/train_loop.py --steps 200" fixed="--fixed"
else
    loop="$RB/examples/train_loop --steps 200" fixed="--leak 0"
fi
show "leakwatch run --cuda-stand-ins --quiet --fail-on-leak --report $D/gate.json -- $loop; echo \"exit status \$?\""
show "leakwatch run --cuda-stand-ins --quiet --fail-on-leak --report $D/gate.json -- $loop $fixed; echo \"exit status \$?\""
printf '\nReports and the HTML page are in %s\n' "$D"
