# SPDX-License-Identifier: Apache-2.0
"""A job whose folder holds its own leakwatch.py (tests/integration/
test_torch.c): it says which leakwatch it imported, then keeps COUNT
allocations of 1 MiB through the CPU stand-in runtime ($LW_CUDART), which
leakwatch must still record. With "torch", the stand-in torch is imported
and optimizer.step() is called after each allocation (leakwatch's own
helper marks the steps)."""
import ctypes
import os
import sys

import leakwatch

print("imported leakwatch:", getattr(leakwatch, "JOB_MARKER", "not the job's"), flush=True)
COUNT = int(os.environ.get("COUNT", "10"))
mark = None
if "torch" in sys.argv[1:]:
    import torch.optim.optimizer

    mark = torch.optim.optimizer.Optimizer(lambda: None).step
rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
kept = []
for _ in range(COUNT):
    p = ctypes.c_void_p()
    if rt.cudaMalloc(ctypes.byref(p), 1 << 20) != 0:
        raise RuntimeError("cudaMalloc failed")
    kept.append(p)
    if mark:
        mark()
print("kept", len(kept), flush=True)
