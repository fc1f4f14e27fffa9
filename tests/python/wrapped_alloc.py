# SPDX-License-Identifier: Apache-2.0
"""A shared allocation wrapper: stash() and scratch() both allocate through
device_alloc(), through the CPU stand-in runtime with ctypes. stash() keeps
what it allocates (the leak), scratch() frees it. Every site's place to look
is device_alloc's line; the test checks that every view names the leaking
caller's line, by way of the wrapper."""
import ctypes
import os
import time

rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
step = getattr(ctypes.CDLL(None), "leakwatch_step", None)

history = []


def device_alloc(n):
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), n)  # WRAPPER-LINE
    return p


def stash(n):
    history.append(device_alloc(n))  # STASH-LINE


def scratch(n):
    return device_alloc(n)  # SCRATCH-LINE


def train(steps):
    for _ in range(steps):
        act = scratch(1 << 20)
        stash(512)
        rt.cudaFree(act)
        if step:
            step()


train(int(os.environ.get("STEPS", "200")))

# Stays up (for leakwatch top) until the test creates this file.
go = os.environ.get("LW_WAIT_FILE")
if go:
    print("READY", flush=True)
    for _ in range(1200):
        if os.path.exists(go):
            break
        time.sleep(0.05)
