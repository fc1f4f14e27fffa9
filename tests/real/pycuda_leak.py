# SPDX-License-Identifier: Apache-2.0
"""A PyCUDA loop that leaks device memory through a helper module.

    python3 tests/real/pycuda_leak.py [--steps 300] [--n 4096] [--fixed]

Each step round-trips a host array through a temporary buffer (freed) and
checks gpuarray.to_gpu(x).get(); then pycuda_mylib keeps a mem_alloc buffer
of 4n bytes and a to_gpu copy of the n float32: 32 KiB a step by default.
--fixed: nothing is kept. Marks each step with leakwatch.step() when the
leakwatch package is importable (PYTHONPATH=python). Runs on real PyCUDA's
_driver extension; on a CPU, on the stand-in driver (build/tests/lib, which
also holds the libcurand.so.10 stand-in _driver links)."""
import argparse
import os
import sys

import numpy as np
import pycuda.autoinit  # noqa: F401  (a context on device 0, popped at exit)
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pycuda_mylib  # noqa: E402

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
    args = ap.parse_args()

    dev = pycuda.autoinit.device
    free0, total = drv.mem_get_info()
    print(f"pycuda {dev.name()} cc {dev.compute_capability()}, {total >> 30} GiB", flush=True)
    for i in range(args.steps):
        host = np.full(args.n, i, dtype=np.float32)
        back = pycuda_mylib.roundtrip(host)
        assert back[0] == i and back[-1] == i, (i, back[:4])
        got = gpuarray.to_gpu(host).get()
        assert got[-1] == i, (i, got[:4])
        if not args.fixed:
            pycuda_mylib.stash_raw(host.nbytes)  # CALL-RAW
            pycuda_mylib.stash_array(host)  # CALL-ARRAY
        step()
    free1, _ = drv.mem_get_info()
    print(
        f"steps {args.steps}, kept {pycuda_mylib.kept_bytes()} B, "
        f"device memory in use grew {free0 - free1} B",
        flush=True,
    )


if __name__ == "__main__":
    main()
