# SPDX-License-Identifier: Apache-2.0
"""A numba.cuda loop that leaks device arrays through a helper module.

    python3 tests/real/numba_leak.py [--steps 300] [--n 4096] [--fixed]
                                     [--unmarked] [--step-ms MS]
                                     [--release-then SECONDS]

Each step uploads a host array and reads it back (temporary device memory,
freed), then calls numba_mylib.stash(), which keeps a new device array of n
float32 for good: 16 KiB a step by default. --fixed: nothing is kept.
--step-ms: each step ends with a pause of MS ms; under leakwatch's test clock
(LEAKWATCH_TEST_CLOCK=1, for tests) the pause moves leakwatch's time on
instead of sleeping (and returns once its sampler has caught up), so that
with --unmarked its time intervals see the same steps each whatever the
machine's load. The pauses after --release-then are 2 ms each, the same way.
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
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numba_mylib  # noqa: E402
from test_clock_pause import pause  # noqa: E402

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
    ap.add_argument("--step-ms", type=float, default=0, metavar="MS",
                    help="a pause of MS ms after each step (0: as fast as it runs)")
    ap.add_argument("--release-then", type=float, default=0, metavar="SECONDS",
                    help="at the end, free what was kept (a teardown), then go on "
                         "with temporary arrays for SECONDS")
    args = ap.parse_args()
    mark = (lambda: None) if args.unmarked else step

    dev = cuda.get_current_device()
    free0, total = cuda.current_context().get_memory_info()
    print(f"numba {dev.name.decode()} cc {dev.compute_capability}, {total >> 30} GiB", flush=True)
    for i in range(args.steps):
        host = np.full(args.n, i, dtype=np.float32)
        back = numba_mylib.roundtrip(host)
        assert back[0] == i and back[-1] == i, (i, back[:4])
        if not args.fixed:
            numba_mylib.stash(args.n)  # CALL-LINE
        mark()
        if args.step_ms:
            pause(args.step_ms / 1000)
    free1, _ = cuda.current_context().get_memory_info()
    print(
        f"steps {args.steps}, kept {numba_mylib.kept_bytes()} B, "
        f"device memory in use grew {free0 - free1} B",
        flush=True,
    )
    if args.release_then:
        # A teardown: everything kept goes back, then the job works on.
        numba_mylib.release()
        for _ in range(max(1, round(args.release_then / 0.002))):
            numba_mylib.roundtrip(np.zeros(args.n, dtype=np.float32))
            pause(0.002)
        print("released", flush=True)


if __name__ == "__main__":
    main()
