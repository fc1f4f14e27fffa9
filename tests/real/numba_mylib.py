# SPDX-License-Identifier: Apache-2.0
"""Helper module of numba_leak.py: a "library" that keeps device arrays.

stash() is the leak: every call allocates a device array with numba.cuda and
keeps it in a module-level list that nothing ever empties, as a cache or a
history kept "for later" does. leakwatch should name the line marked
LEAK-LINE (or the caller's line in numba_leak.py)."""
import numpy as np
from numba import cuda

_keep = []


def stash(n):
    """Allocates n float32 on the device and keeps them: the leak."""
    _keep.append(cuda.device_array(n, dtype=np.float32))  # LEAK-LINE


def roundtrip(host):
    """Uploads host, reads it back: a temporary device array, freed when the
    function returns (numba frees it with its next batch of deallocations)."""
    dev = cuda.to_device(host)  # TEMP-LINE
    return dev.copy_to_host()


def kept_bytes():
    return sum(a.nbytes for a in _keep)


def release():
    """Frees everything kept (as the interpreter's teardown does), at once."""
    _keep.clear()
    cuda.current_context().deallocations.clear()
