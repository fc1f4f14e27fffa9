/* SPDX-License-Identifier: Apache-2.0 */
/* The hidden interface between the two halves of the stand-in driver
 * (build/tests/lib/libcuda.so.1 and its variants):
 *   fake_cuda.c          the memory, context and cuGetProcAddress model that
 *                        leakwatch's hooks are tested against;
 *   fake_cuda_clients.c  the rest of the driver API that real clients (numba's
 *                        ctypes binding, PyCUDA's _driver extension) look up
 *                        or link: device attributes, streams, events, copies,
 *                        modules, and the rarely used entry points.
 * Nothing here is exported: hidden visibility, so that the clients half reaches
 * the model directly, never through a symbol a preloaded library could
 * interpose (the real driver calls itself the same way). */
#ifndef LW_FAKE_CUDA_INTERNAL_H
#define LW_FAKE_CUDA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fake_common.h"

#define FAKE_HIDDEN __attribute__((visibility("hidden")))

enum fake_range_kind {
    FAKE_RANGE_DEVICE = 1, /* cuMemAlloc*, managed, async, pitch, IPC-opened */
    FAKE_RANGE_MAPPED,     /* a cuMemMap mapping (VMM) */
    FAKE_RANGE_HOST,       /* pinned host memory of cuMemHostAlloc/cuMemAllocHost */
    FAKE_RANGE_REGISTERED, /* host memory page-locked by cuMemHostRegister */
};

struct fake_range {
    uintptr_t base;
    size_t size;
    int dev;
    enum fake_range_kind kind;
};

/* CUDA_SUCCESS once cuInit succeeded, else CUDA_ERROR_NOT_INITIALIZED. */
FAKE_HIDDEN CUresult fake_cuda_need_init(void);
/* As need_init, then the calling thread's current device, or
 * CUDA_ERROR_INVALID_CONTEXT when it has no current context. */
FAKE_HIDDEN CUresult fake_cuda_need_ctx(int *dev);
FAKE_HIDDEN int fake_cuda_device_count(void);
/* Memory per device (FAKE_CUDA_MEM_BYTES, 80 GiB by default). */
FAKE_HIDDEN size_t fake_cuda_mem_limit(void);
/* The primary context handle of dev, and the device of a context handle. */
FAKE_HIDDEN CUcontext fake_cuda_primary_ctx(int dev);
FAKE_HIDDEN bool fake_cuda_ctx_device(CUcontext ctx, int *dev);
/* The live allocation or host range that holds addr. */
FAKE_HIDDEN bool fake_cuda_find_range(uintptr_t addr, struct fake_range *out);

/* Hidden aliases of fake_cuda.c's context entry points. */
FAKE_HIDDEN CUresult fake_cuda_primary_retain(CUcontext *pctx, CUdevice dev);
FAKE_HIDDEN CUresult fake_cuda_primary_release(CUdevice dev);
FAKE_HIDDEN CUresult fake_cuda_ctx_push(CUcontext ctx);
FAKE_HIDDEN CUresult fake_cuda_ctx_pop(CUcontext *pctx);
FAKE_HIDDEN CUresult fake_cuda_ctx_get_current(CUcontext *pctx);

#endif
