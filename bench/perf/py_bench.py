# SPDX-License-Identifier: Apache-2.0
"""cudaMalloc/cudaFree pairs from Python, 20 Python frames deep (leakwatch bench).

    python3 py_bench.py LIBCUDART [PAIRS [PYFRAMES [WARMUP]]]

Loads the CPU stand-in runtime with ctypes (RTLD_GLOBAL) and calls it through
the process's global symbol scope, as a program linked against libcudart
would: with libleakwatch.so preloaded, the calls reach leakwatch's wrappers.
Recurses until the Python stack (counted with traceback.extract_stack, the
module frame included) is PYFRAMES deep, then times PAIRS pairs. ctypes itself
costs far more than leakwatch; run it with and without the shim and subtract.
Prints one RESULT line as rt_bench does. Standard library only.

With LW_PY_EXT=PATH (bench/perf/py_ext.c, built as BUILD/bench/py_ext.so) the
pairs are made by C code, LW_PY_EXT_DEPTH (default 8) native frames below one
ctypes call: Python frames over C extension frames, and no ctypes cost per
pair.

With LW_PY_EXT and LW_PY_INTERLEAVE=K as well (the lock-free runtime stand-in,
bench/perf/fast_cudart.c, whose entries are also exported under names
leakwatch does not hook), the one process times 2K batches, alternately of 16 x PAIRS pairs through
the unhooked names and of PAIRS pairs through the hooked ones (raw, hooked,
hooked, raw, ...: a drift in the machine's speed falls on both alike), each
on this thread's CPU clock, and prints a BATCHES line after the RESULT line:
"BATCHES raw=NS,NS,... hooked=NS,NS,...", ns a pair, in order. A batch of the
one kind and the batch of the other next to it ran within milliseconds of
each other: on a shared machine whose speed changes by half from one tenth of
a second to the next, only such neighbours compare.
"""

import ctypes
import os
import sys
import time
import traceback


def main():
    lib_path = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    want = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 2000

    ctypes.CDLL(lib_path, mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)
    glob = ctypes.CDLL(None)
    cuda_malloc = glob.cudaMalloc
    cuda_malloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    cuda_malloc.restype = ctypes.c_int
    cuda_free = glob.cudaFree
    cuda_free.argtypes = [ctypes.c_void_p]
    cuda_free.restype = ctypes.c_int
    if cuda_free(None) != 0:
        sys.exit("py_bench: the runtime did not start")

    result = {}
    ext_path = os.environ.get("LW_PY_EXT")
    ext_depth = int(os.environ.get("LW_PY_EXT_DEPTH", "8"))

    def ext_loop():
        result["pyframes"] = len(traceback.extract_stack())
        ext = ctypes.CDLL(ext_path)
        run = ext.lw_bench_ext_pairs
        run.argtypes = [ctypes.c_long, ctypes.c_int]
        run.restype = ctypes.c_long
        if run(warmup, ext_depth):
            sys.exit("py_bench: an allocation failed")
        interleave = int(os.environ.get("LW_PY_INTERLEAVE", "0"))
        if interleave > 0:
            raw = ext.lw_bench_ext_pairs_raw
            raw.argtypes = [ctypes.c_long, ctypes.c_int]
            raw.restype = ctypes.c_long
            if raw(warmup, ext_depth):
                sys.exit("py_bench: LW_PY_INTERLEAVE needs the lock-free runtime stand-in")
            times = {True: [], False: []}
            for i in range(2 * interleave):
                hooked = (i % 4) in (1, 2)
                # A bare batch makes 16 times the pairs: each kind of batch
                # then lasts about as long (a few ms), and so sees the same
                # spell of the machine's speed.
                n = pairs if hooked else 16 * pairs
                t0 = time.thread_time_ns()
                if (run if hooked else raw)(n, ext_depth):
                    sys.exit("py_bench: an allocation failed")
                times[hooked].append((time.thread_time_ns() - t0) / n)
            result["batches"] = "BATCHES raw=%s hooked=%s" % (
                ",".join("%.1f" % x for x in times[False]),
                ",".join("%.1f" % x for x in times[True]),
            )
        c0 = time.process_time_ns()
        w0 = time.perf_counter_ns()
        if run(pairs, ext_depth):
            sys.exit("py_bench: an allocation failed")
        result["wall"] = time.perf_counter_ns() - w0
        result["cpu"] = time.process_time_ns() - c0

    def loop():
        result["pyframes"] = len(traceback.extract_stack())
        p = ctypes.c_void_p()
        ref = ctypes.byref(p)
        for _ in range(warmup):
            cuda_malloc(ref, 4096)
            cuda_free(p)
        c0 = time.process_time_ns()
        w0 = time.perf_counter_ns()
        for _ in range(pairs):
            if cuda_malloc(ref, 4096):
                sys.exit("py_bench: cudaMalloc failed")
            cuda_free(p)
        result["wall"] = time.perf_counter_ns() - w0
        result["cpu"] = time.process_time_ns() - c0

    def recurse(n):
        if n > 0:
            recurse(n - 1)
        elif ext_path:
            ext_loop()
        else:
            loop()

    # recurse(n) makes n + 1 frames; <module>, main and loop are frames too.
    recurse(max(0, want - 4))
    print(
        "RESULT mode=python threads=1 pyframes=%d pairs=%d ns_per_pair=%.1f cpu_ns_per_pair=%.1f"
        % (result["pyframes"], pairs, result["wall"] / pairs, result["cpu"] / pairs),
        flush=True,
    )
    if "batches" in result:
        print(result["batches"], flush=True)


if __name__ == "__main__":
    main()
