# SPDX-License-Identifier: Apache-2.0
"""A training loop that marks its own steps with leakwatch.step() after each
optimizer.step() of the stand-in torch (tests/integration/test_torch.c):
under the preload, `import leakwatch` gives the copy the library's
auto-start loaded, so its optimizer hook sees the manual steps and steps
are counted once. Prints the number of leakwatch optimizer hooks."""
import ctypes
import os

import torch.optim.optimizer

import leakwatch

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
    leakwatch.step()
hooks = torch.optim.optimizer._global_optimizer_post_hooks.values()
print("leakwatch hooks:", sum(1 for h in hooks if getattr(h, "_leakwatch", False)), flush=True)
