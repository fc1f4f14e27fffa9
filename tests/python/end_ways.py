# SPDX-License-Identifier: Apache-2.0
"""A Python job that leaks through the CPU stand-in runtime (ctypes), then
ends in the way argv[1] names, for the test that every ending writes the
final report and summary (tests/integration/test_edges.c):
  normal      returns from the script
  sys_exit    sys.exit(3)
  exception   an uncaught RuntimeError (exit status 1)
  interrupt   keeps stepping, printing "ready" once, until a signal ends it
              (SIGINT: an uncaught KeyboardInterrupt; SIGTERM, SIGHUP: their
              default action)
  nocuda      never calls CUDA, raises KeyboardInterrupt (nothing to say)"""
import ctypes
import os
import sys
import time

mode = sys.argv[1]
if mode == "nocuda":
    import leakwatch  # noqa: F401  (as a job that imports it would)

    raise KeyboardInterrupt

rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
mark = getattr(ctypes.CDLL(None), "leakwatch_step", None)
kept = []


def one_step():
    act = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(act), 1 << 20)
    loss = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(loss), 4096)  # LEAK-LINE
    kept.append(loss)
    rt.cudaFree(act)
    if mark:
        mark()


for _ in range(200):
    one_step()

if mode == "sys_exit":
    sys.exit(3)
elif mode == "exception":
    raise RuntimeError("the job failed")
elif mode == "interrupt":
    print("ready", flush=True)
    while True:
        one_step()
        time.sleep(0.002)
