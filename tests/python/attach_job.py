# SPDX-License-Identifier: Apache-2.0
"""A Python job for tests/integration/test_attach.c, started without
leakwatch: it says "ready PID", waits until GO_FILE exists, then makes STEPS
steps of 10 ms, each keeping 1 MiB through the CPU stand-in runtime
($LW_CUDART, with ctypes). Its first CUDA call comes after GO_FILE: the
runtime starts after the attach and finds the driver through the hooked
dlsym.

    attach_job.py torch|package|late|plain STEPS GO_FILE

With ATTACH_STOP=FILE in the environment it stops early, after the step at
which FILE exists ("done N steps" says how many it made): a test can detach
once the state it needs is there, with the job surely running.

torch: the stand-in torch (tests/python/faketorch on PYTHONPATH) is imported
first and optimizer.step() is called every step; the attach's Python helper
marks the steps. package: the leakwatch package is imported first (before
the library is there) and leakwatch.step() is called every step. late: the
leakwatch package, not on the job's sys.path, is imported after the attach
(the attach's helper gives its copy) and leakwatch.step() is called every
step. plain: neither; steps are time intervals."""
import ctypes
import os
import sys
import time

mode, steps, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if mode == "torch":
    import torch.optim.optimizer

    optimizer = torch.optim.optimizer.Optimizer(lambda: None)
    mark = optimizer.step
elif mode == "package":
    import leakwatch

    mark = leakwatch.step
else:

    def mark():
        pass


rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
kept = []


def leak_attach_py():
    p = ctypes.c_void_p()
    if rt.cudaMalloc(ctypes.byref(p), 1 << 20) != 0:
        raise RuntimeError("cudaMalloc failed")
    kept.append(p)


print("ready", os.getpid(), flush=True)
while not os.path.exists(go):
    time.sleep(0.002)
if mode == "late":
    # The attach's helper thread makes its copy of the package importable
    # after the attach returns: wait for that state (the bound only turns a
    # hang into a failure).
    import importlib.util

    end = time.monotonic() + 120
    while importlib.util.find_spec("leakwatch") is None and time.monotonic() < end:
        time.sleep(0.002)
    import leakwatch

    mark = leakwatch.step
stop = os.environ.get("ATTACH_STOP")
made = 0
while made < steps and not (stop and os.path.exists(stop)):
    leak_attach_py()
    mark()
    made += 1
    time.sleep(0.01)
print("done", made, "steps", flush=True)
