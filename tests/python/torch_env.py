# SPDX-License-Identifier: Apache-2.0
"""Prints what leakwatch's constructor may have changed, one "NAME=value"
line each ("NAME unset" when unset), then, with the argument "cuda", makes
two CUDA allocations through the CPU stand-in runtime ($LW_CUDART), so
leakwatch starts in this process."""
import ctypes
import os
import sys

for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTHONPATH"):
    value = os.environ.get(name)
    print(f"{name} unset" if value is None else f"{name}={value}")
# The auto-start loads leakwatch's package as _leakwatch_helper ("leakwatch"
# stays the job's name to import).
print("leakwatch loaded" if "_leakwatch_helper" in sys.modules else "leakwatch not loaded")
if len(sys.argv) > 1 and sys.argv[1] == "cuda":
    rt = ctypes.CDLL(os.environ["LW_CUDART"])
    rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    for _ in range(2):
        p = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(p), 4096) == 0
sys.stdout.flush()
