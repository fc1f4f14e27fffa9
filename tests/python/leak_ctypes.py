# SPDX-License-Identifier: Apache-2.0
"""A Python training loop that leaks through the CPU stand-in runtime, called
with ctypes: once with the GIL held (PyDLL), once released (CDLL). The test
checks that the report's leaking site names this file, the function and the
line of the leaking call."""
import ctypes
import os
import sys

lib = os.environ["LW_CUDART"]
if os.environ.get("LW_FAKE_FREE_THREADED"):
    # Looks like a free-threaded build to leakwatch (before its start, which
    # the first CUDA call triggers): Python lines must then be refused.
    ctypes.CDLL(os.environ["LW_FAKE_FREE_THREADED"], mode=ctypes.RTLD_GLOBAL)
gil_held = len(sys.argv) > 1 and sys.argv[1] == "pydll"
rt = (ctypes.PyDLL if gil_held else ctypes.CDLL)(lib)
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
step = getattr(ctypes.CDLL(None), "leakwatch_step", None)

history = []


def forward():
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), 1 << 20)  # activations, freed below
    return p


def train(steps):
    for _ in range(steps):
        act = forward()
        loss = ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(loss), 512)  # LEAK-LINE: history.append(loss)
        history.append(loss)
        rt.cudaFree(act)
        if step:
            step()


class Batch:
    """An object whose constructor allocates: on 3.13 a class call enters
    __init__ through a shim frame that the walker must step over."""

    def __init__(self):
        self.buf = ctypes.c_void_p()
        rt.cudaMalloc(ctypes.byref(self.buf), 512)  # INIT-LINE
        history.append(self)


def train_objects(steps):
    for _ in range(steps):
        Batch()
        if step:
            step()


if len(sys.argv) > 2 and sys.argv[2] == "init":
    train_objects(int(os.environ.get("STEPS", "200")))
else:
    train(int(os.environ.get("STEPS", "200")))
