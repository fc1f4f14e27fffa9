# SPDX-License-Identifier: Apache-2.0
"""The helper's per-step calls into the library are Python builtins
(leakwatch_py_step, _backward_enter, _backward_leave wrapped by
PyCFunction_NewEx in leakwatch/__init__.py), not ctypes calls, and the steps
they mark count (tests/integration/test_torch.c): STEPS optimizer steps of
the stand-in torch, one 1 MiB allocation each. Prints the calls' types."""
import ctypes
import os
import sys

import torch.optim.optimizer

STEPS = int(os.environ.get("STEPS", "30"))
optimizer = torch.optim.optimizer.Optimizer(lambda: None)
rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
kept = []
for _ in range(STEPS):
    p = ctypes.c_void_p()
    if rt.cudaMalloc(ctypes.byref(p), 1 << 20) != 0:
        raise RuntimeError("cudaMalloc failed")
    kept.append(p)
    optimizer.step()
h = sys.modules["_leakwatch_helper._torch"]._helper
calls = (sys.modules["_leakwatch_helper"]._step, h.lib.backward_enter, h.lib.backward_leave)
print("calls:", " ".join(type(c).__name__ for c in calls), flush=True)
h.lib.backward_enter()
h.lib.backward_leave()
