#!/bin/sh
# make demo: a leaking training loop, run under leakwatch on the project's
# CPU stand-ins for the CUDA libraries (no GPU needed), then its report.
set -eu
B="${1:-build}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd)
OUT=$(mktemp -d /tmp/leakwatch-demo.XXXXXX)
export LD_LIBRARY_PATH="$B/tests/lib"

echo "== 1. A C training loop that keeps each step's loss on the GPU"
echo "   LD_PRELOAD=$B/libleakwatch.so $B/examples/train_loop --steps 600"
LD_PRELOAD="$B/libleakwatch.so" LEAKWATCH_REPORT="$OUT/train_loop.json" \
    "$B/examples/train_loop" --steps 600
echo
if PY=$(command -v python3); then
    echo "== 2. The same bug in Python (history.append(loss)), through ctypes"
    LW_CUDART="$B/tests/lib/libcudart.so" LD_PRELOAD="$B/libleakwatch.so" \
        LEAKWATCH_REPORT="$OUT/python.json" STEPS=300 "$PY" "$ROOT/tests/python/leak_ctypes.py"
    echo
fi
if [ -x "$B/leakwatch" ]; then
    for f in "$OUT"/*.json; do
        echo "== leakwatch report $f"
        "$B/leakwatch" report "$f"
        echo
    done
else
    echo "== the JSON report: $OUT/train_loop.json"
    head -c 1200 "$OUT/train_loop.json"; echo " ..."
fi
echo "Reports kept in $OUT"
