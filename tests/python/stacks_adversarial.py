# SPDX-License-Identifier: Apache-2.0
"""Python call stacks written to defeat leakwatch's cache of the last Python
frames (docs/stacks.md), run under LEAKWATCH_VERIFY_STACKS=1 by
tests/integration/test_python.c: every capture served from the cache is
compared with a walk of the frames, and the report must count no difference.
Each case leaks from its own line, and the test reads the bytes back:

- the same function at recursion depths that vary;
- one generator resumed from two different callers in turn;
- one function called from two lines in turn (the same frames, another
  instruction in the caller);
- functions compiled anew in every round (code objects freed and made again,
  often at the same address);
- threads that exit and new ones at the same frame depths.
"""
import ctypes
import os
import threading

rt = ctypes.CDLL(os.environ["LW_CUDART"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]
kept = []
ROUNDS = int(os.environ.get("ROUNDS", "60"))


def alloc(size, keep):
    p = ctypes.c_void_p()
    rt.cudaMalloc(ctypes.byref(p), size)
    if keep:
        kept.append(p)
    else:
        rt.cudaFree(p)


def deep(n, size):
    if n == 0:
        alloc(size, True)  # LINE-DEEP
        return
    deep(n - 1, size)


def gen():
    while True:
        alloc(2002, True)  # LINE-GEN
        yield


def caller_a(g):
    next(g)  # LINE-CALLER-A


def caller_b(g):
    next(g)  # LINE-CALLER-B


def two_lines(i):
    if i % 2:
        alloc(3003, True)  # LINE-TWO-A
    else:
        alloc(3005, True)  # LINE-TWO-B


SOURCE = """
def fresh(alloc):
    alloc(4004, True)
"""


def thread_body(depth):
    deep(depth, 5005)


def main():
    g = gen()
    for i in range(ROUNDS):
        deep((i * 7) % 13, 1001)
        deep(i % 3, 1001)
        (caller_a if i % 2 else caller_b)(g)
        two_lines(i)
        two_lines(i + 1)
        ns = {}
        exec(compile(SOURCE, "<fresh>", "exec"), ns)
        ns["fresh"](alloc)
        del ns
        alloc(64, False)
    for t in range(ROUNDS // 4):
        th = threading.Thread(target=thread_body, args=(t % 9,))
        th.start()
        th.join()


main()
