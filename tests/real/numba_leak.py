# SPDX-License-Identifier: Apache-2.0
"""A numba.cuda loop that leaks device arrays through a helper module.

    python3 tests/real/numba_leak.py [--steps 300] [--n 4096] [--fixed]
                                     [--unmarked] [--pace-ms MS]
                                     [--release-then SECONDS]

Each step uploads a host array and reads it back (temporary device memory,
freed), then calls numba_mylib.stash(), which keeps a new device array of n
float32 for good: 16 KiB a step by default. --fixed: nothing is kept.
--pace-ms: step i starts MS * i ms after the first (a fixed rate, as long as
a step's work fits in MS): with --unmarked, leakwatch's time intervals then
see the same growth each whatever the machine's load.
Marks each step with leakwatch.step() when the leakwatch package is
importable (PYTHONPATH=python), so the growth is per step. Runs on real
numba's ctypes binding; on a CPU, on the stand-in driver (a CUDA 12.8 one:
build/tests/lib-cuda12, see the Makefile). Device arrays only: no @cuda.jit
(that needs NVIDIA's NVVM)."""
import argparse
import os
import sys
import time

import numpy as np
from numba import cuda

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numba_mylib  # noqa: E402

try:
    import leakwatch

    step = leakwatch.step
except ImportError:  # runs without leakwatch too

    def step():
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--fixed", action="store_true", help="keep nothing")
    ap.add_argument("--unmarked", action="store_true",
                    help="no leakwatch.step(): leakwatch follows time intervals")
    ap.add_argument("--pace-ms", type=float, default=0, metavar="MS",
                    help="start step i at i * MS ms (a fixed rate; 0: as fast as it runs)")
    ap.add_argument("--release-then", type=float, default=0, metavar="SECONDS",
                    help="at the end, free what was kept (a teardown), then go on "
                         "with temporary arrays for SECONDS")
    args = ap.parse_args()
    mark = (lambda: None) if args.unmarked else step

    dev = cuda.get_current_device()
    free0, total = cuda.current_context().get_memory_info()
    print(f"numba {dev.name.decode()} cc {dev.compute_capability}, {total >> 30} GiB", flush=True)
    t0 = time.monotonic()
    for i in range(args.steps):
        if args.pace_ms:
            wait = t0 + i * args.pace_ms / 1000 - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        host = np.full(args.n, i, dtype=np.float32)
        back = numba_mylib.roundtrip(host)
        assert back[0] == i and back[-1] == i, (i, back[:4])
        if not args.fixed:
            numba_mylib.stash(args.n)  # CALL-LINE
        mark()
    free1, _ = cuda.current_context().get_memory_info()
    print(
        f"steps {args.steps}, kept {numba_mylib.kept_bytes()} B, "
        f"device memory in use grew {free0 - free1} B",
        flush=True,
    )
    if args.release_then:
        # A teardown: everything kept goes back, then the job works on.
        numba_mylib.release()
        end = time.monotonic() + args.release_then
        while time.monotonic() < end:
            numba_mylib.roundtrip(np.zeros(args.n, dtype=np.float32))
            time.sleep(0.002)
        print("released", flush=True)


if __name__ == "__main__":
    main()
