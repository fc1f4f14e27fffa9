# SPDX-License-Identifier: Apache-2.0
"""CUDA called through ctypes (libffi), from a process whose global scope has no
CUDA library: tests/integration/test_layouts.c runs it with and without
leakwatch and compares what it prints.

    python3 tail_ctypes.py LIBDIR N SIZE

LIBDIR holds the stand-in runtime (libcudart.so) and the tail-call module
(libmod_tail.so, tests/modules/mod_tail.c). Both are opened RTLD_LOCAL, as
ctypes.CDLL opens libraries by default. N blocks of SIZE bytes are kept and 3
more freed through the runtime's own cudaMalloc/cudaFree (found by dlsym on its
handle), then as many through the module's wrappers, which end in a tail call
(libffi's call returns straight from the runtime function). One line per path:
the first error (0: every call succeeded)."""
import ctypes
import os
import sys

CHURN = 3


def run(alloc, free, n, size):
    alloc.restype = ctypes.c_int
    alloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    free.restype = ctypes.c_int
    free.argtypes = [ctypes.c_void_p]
    first = 0
    for i in range(n + CHURN):
        p = ctypes.c_void_p()
        r = alloc(ctypes.byref(p), size)
        if r and not first:
            first = r
        if not r and i >= n:
            r = free(p)
            if r and not first:
                first = r
    return first


def main():
    libdir, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rt = ctypes.CDLL(os.path.join(libdir, "libcudart.so"), mode=os.RTLD_LOCAL)
    print("runtime: %d" % run(rt.cudaMalloc, rt.cudaFree, n, size))
    mod = ctypes.CDLL(os.path.join(libdir, "libmod_tail.so"), mode=os.RTLD_LOCAL)
    print("module: jump=%d %d" % (mod.tail_is_jump(), run(mod.tail_malloc, mod.tail_free, n, size)))
    mod.tail_runtime_mallocs.restype = ctypes.c_ulong
    print("reached the runtime: %d" % mod.tail_runtime_mallocs())


main()
