# SPDX-License-Identifier: Apache-2.0
"""Helper module of pycuda_leak.py: a "library" that keeps device memory.

stash_raw() keeps a pycuda.driver.mem_alloc buffer, stash_array() a
gpuarray.to_gpu copy, each in a module-level list that nothing empties: the
two leaks. leakwatch should name the lines marked LEAK-LINE
(or the caller's lines in pycuda_leak.py)."""
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

_keep = []
_kept_bytes = 0


def stash_raw(nbytes):
    """A raw device buffer, kept: leak one."""
    global _kept_bytes
    _keep.append(drv.mem_alloc(nbytes))  # LEAK-LINE (raw)
    _kept_bytes += nbytes


def stash_array(host):
    """A device copy of host, kept: leak two."""
    global _kept_bytes
    _keep.append(gpuarray.to_gpu(host))  # LEAK-LINE (array)
    _kept_bytes += host.nbytes


def roundtrip(host):
    """Uploads host and reads it back through a buffer freed on return."""
    buf = drv.mem_alloc(host.nbytes)  # TEMP-LINE
    drv.memcpy_htod(buf, host)
    back = host.copy()
    back[:] = 0
    drv.memcpy_dtoh(back, buf)
    return back


def kept_bytes():
    return _kept_bytes
