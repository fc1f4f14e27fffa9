# SPDX-License-Identifier: Apache-2.0
"""Pinned host memory kept step after step (as a DataLoader with
pin_memory=True whose batches are held), through the CPU stand-in runtime
($LW_CUDART); device memory flat, or also leaking with "device"; with
"ring", the fix: a ring of 4 pinned buffers, the oldest freed.

    pinned_leak.py [device|ring]"""
import ctypes
import os
import sys

STEPS = int(os.environ.get("STEPS", "120"))
rt = ctypes.CDLL(os.environ["LW_CUDART"])
vp = ctypes.c_void_p
rt.cudaMalloc.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t]
rt.cudaFree.argtypes = [vp]
rt.cudaMallocHost.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t]
rt.cudaFreeHost.argtypes = [vp]
step = ctypes.CDLL(None).leakwatch_step
kept = []
for i in range(STEPS):
    host = vp()
    assert rt.cudaMallocHost(ctypes.byref(host), 64 * 1024) == 0  # LEAK-PINNED: a pinned batch
    kept.append(host)
    if "ring" in sys.argv[1:] and len(kept) > 4:
        assert rt.cudaFreeHost(kept.pop(0)) == 0
    act = vp()
    assert rt.cudaMalloc(ctypes.byref(act), 1 << 20) == 0  # activations, freed
    if "device" in sys.argv[1:]:
        kept.append(act)
    else:
        assert rt.cudaFree(act) == 0
    step()
print(f"trained {STEPS} steps")
