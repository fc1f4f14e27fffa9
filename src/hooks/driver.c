/* SPDX-License-Identifier: Apache-2.0 */
/* Driver API wrappers (cuMemAlloc_v2, cuMemAllocAsync_ptsz, cuMemCreate, ...)
 * and the cuGetProcAddress wrappers that hand them out.
 *
 * A caller reaches a driver function three ways: by linking libcuda.so.1
 * (then our exported function of the same name wins, and finds the real one
 * with lw_driver_next: the next definition in the global scope, else the one
 * in the loaded libcuda.so.1, which a module opened RTLD_LOCAL links and the
 * runtime opens without RTLD_GLOBAL), through dlsym (dlsym.c), or through
 * cuGetProcAddress (how the CUDA runtime, static or shared, finds every
 * driver function). For the last two we hand out a wrapper bound to the exact real function the
 * lookup returned: each wrapped function has a few "slots", each a wrapper
 * with its own real pointer, filled first come first served. So the plain and
 * the per-thread-stream (_ptsz) versions of an async function, which share a
 * signature, each keep their own real function. */
#include "hooks.h"

#include "device.h"
#include "guard.h"
#include "imports.h"
#include "lifecycle.h"
#include "lookup.h"
#include "log.h"
#include "real.h"
#include "record.h"
#include "vmm.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#define UNPAREN(...) __VA_ARGS__

/* ---- the recording around each real call ---- */

#define DEVICE_ASK -3 /* ask the driver for the current device, after the call */

static void on_alloc(int outer, CUresult r, lw_kind kind, lw_key_class cls, uint64_t key,
                     uint64_t size, int device) {
    if (!outer || !lw_started()) return;
    int saved = errno;
    if (device == DEVICE_ASK) device = lw_device_current();
    if (r == CUDA_SUCCESS)
        lw_record_alloc(kind, cls, key, size, device);
    else
        lw_record_failure(kind, size, device, r);
    errno = saved;
}

/* The end of an allocation call: record what it gave (the hook was entered
 * before the real call). */
static CUresult dptr_done(int outer, CUresult r, lw_kind kind, const CUdeviceptr *dptr,
                          uint64_t size) {
    on_alloc(outer, r, kind, LW_CLASS_DPTR, r == CUDA_SUCCESS && dptr ? *dptr : 0, size,
             DEVICE_ASK);
    lw_hook_leave();
    return r;
}

static CUresult host_done(int outer, CUresult r, void *const *pp, uint64_t size) {
    on_alloc(outer, r, LW_KIND_PINNED_HOST, LW_CLASS_HOST,
             r == CUDA_SUCCESS && pp ? (uint64_t)(uintptr_t)*pp : 0, size, -1);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAlloc_v2_body(lw_pfn_cuMemAlloc_v3020 real, CUdeviceptr *dptr, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return dptr_done(outer, real(dptr, size), LW_KIND_DEVICE, dptr, size);
}

static CUresult cuMemAllocPitch_v2_body(lw_pfn_cuMemAllocPitch_v3020 real, CUdeviceptr *dptr,
                                        size_t *pitch, size_t width, size_t height,
                                        unsigned int elem) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(dptr, pitch, width, height, elem);
    int ok = r == CUDA_SUCCESS && dptr && pitch;
    return dptr_done(outer, r, LW_KIND_DEVICE, ok ? dptr : NULL,
                     ok ? (uint64_t)*pitch * height : (uint64_t)width * height);
}

static CUresult cuMemAllocManaged_body(lw_pfn_cuMemAllocManaged_v6000 real, CUdeviceptr *dptr,
                                       size_t size, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return dptr_done(outer, real(dptr, size, flags), LW_KIND_MANAGED, dptr, size);
}

static CUresult cuMemAllocAsync_body(lw_pfn_cuMemAllocAsync_v11020 real, CUdeviceptr *dptr,
                                     size_t size, CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return dptr_done(outer, real(dptr, size, stream), LW_KIND_DEVICE, dptr, size);
}

static CUresult cuMemAllocFromPoolAsync_body(lw_pfn_cuMemAllocFromPoolAsync_v11020 real,
                                             CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                             CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return dptr_done(outer, real(dptr, size, pool, stream), LW_KIND_DEVICE, dptr, size);
}

static CUresult cuMemHostAlloc_body(lw_pfn_cuMemHostAlloc_v2020 real, void **pp, size_t size,
                                    unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return host_done(outer, real(pp, size, flags), pp, size);
}

static CUresult cuMemAllocHost_v2_body(lw_pfn_cuMemAllocHost_v3020 real, void **pp, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return host_done(outer, real(pp, size), pp, size);
}

/* Host memory the program allocated, page-locked: pinned host memory until
 * cuMemHostUnregister. */
static CUresult cuMemHostRegister_v2_body(lw_pfn_cuMemHostRegister_v6050 real, void *p, size_t size,
                                          unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    return host_done(outer, real(p, size, flags), &p, size);
}

static CUresult cuMemCreate_body(lw_pfn_cuMemCreate_v10020 real, CUmemGenericAllocationHandle *h,
                                 size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(h, size, prop, flags);
    int device =
        prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    on_alloc(outer, r, LW_KIND_PHYSICAL, LW_CLASS_HANDLE, r == CUDA_SUCCESS && h ? *h : 0, size,
             device);
    if (outer && r == CUDA_SUCCESS && h && lw_started()) lw_vmm_created(*h);
    lw_hook_leave();
    return r;
}

/* Frees: the record leaves the table before the real free (see record.h),
 * and comes back if the driver refuses. */
typedef struct {
    int outer, track;
    lw_free_ticket t;
} free_call;

static void free_begin(free_call *c, lw_key_class cls, uint64_t key) {
    c->outer = lw_hook_enter();
    c->track = c->outer && key != 0 && lw_started();
    int saved = errno;
    if (c->track) lw_record_free_begin(cls, key, &c->t);
    errno = saved;
}

static CUresult free_end(free_call *c, CUresult r) {
    int saved = errno;
    if (c->track) lw_record_free_end(&c->t, r == CUDA_SUCCESS);
    errno = saved;
    lw_hook_leave();
    return r;
}

static CUresult cuMemFree_v2_body(lw_pfn_cuMemFree_v3020 real, CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    free_call c;
    free_begin(&c, LW_CLASS_DPTR, dptr);
    return free_end(&c, real(dptr));
}

static CUresult cuMemFreeAsync_body(lw_pfn_cuMemFreeAsync_v11020 real, CUdeviceptr dptr,
                                    CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    free_call c;
    free_begin(&c, LW_CLASS_DPTR, dptr);
    return free_end(&c, real(dptr, stream));
}

static CUresult cuMemFreeHost_body(lw_pfn_cuMemFreeHost_v2000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    free_call c;
    free_begin(&c, LW_CLASS_HOST, (uint64_t)(uintptr_t)p);
    return free_end(&c, real(p));
}

static CUresult cuMemHostUnregister_body(lw_pfn_cuMemHostUnregister_v4000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    free_call c;
    free_begin(&c, LW_CLASS_HOST, (uint64_t)(uintptr_t)p);
    return free_end(&c, real(p));
}

/* Imports (imports.h): another process's memory, opened here. Counted apart
 * from this process's own, never as device memory. */
void lw_hook_import_opened(int outer, int succeeded, int vmm_handle, uint64_t key) {
    if (!outer || !lw_started()) return;
    int saved = errno;
    if (!succeeded) {
        lw_import_failed();
    } else if (!vmm_handle) {
        lw_import_opened(LW_CLASS_DPTR, key, lw_device_range_size(key));
    } else {
        lw_import_opened(LW_CLASS_HANDLE, key, 0);
        lw_vmm_imported(key);
    }
    errno = saved;
}

void lw_hook_import_close_begin(int outer, uint64_t dptr, lw_hook_import_close *c) {
    c->track = outer && dptr != 0 && lw_started();
    int saved = errno;
    if (c->track) lw_import_close_begin(LW_CLASS_DPTR, dptr, &c->t);
    errno = saved;
}

void lw_hook_import_close_end(lw_hook_import_close *c, int succeeded) {
    int saved = errno;
    if (c->track) lw_import_close_end(&c->t, succeeded);
    errno = saved;
}

static CUresult cuIpcOpenMemHandle_body(lw_pfn_cuIpcOpenMemHandle_v11000 real, CUdeviceptr *dptr,
                                        CUipcMemHandle handle, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(dptr, handle, flags);
    lw_hook_import_opened(outer, r == CUDA_SUCCESS && dptr, 0,
                          r == CUDA_SUCCESS && dptr ? *dptr : 0);
    lw_hook_leave();
    return r;
}

static CUresult cuIpcCloseMemHandle_body(lw_pfn_cuIpcCloseMemHandle_v4010 real, CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_hook_import_close c;
    lw_hook_import_close_begin(lw_hook_enter(), dptr, &c);
    CUresult r = real(dptr);
    lw_hook_import_close_end(&c, r == CUDA_SUCCESS);
    lw_hook_leave();
    return r;
}

static CUresult
cuMemImportFromShareableHandle_body(lw_pfn_cuMemImportFromShareableHandle_v10020 real,
                                    CUmemGenericAllocationHandle *h, void *os_handle,
                                    CUmemAllocationHandleType type) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(h, os_handle, type);
    lw_hook_import_opened(outer, r == CUDA_SUCCESS && h, 1, r == CUDA_SUCCESS && h ? *h : 0);
    lw_hook_leave();
    return r;
}

/* VMM (vmm.h): physical memory goes at the last of its releases and
 * unmaps; the record leaves the table before the real call that ends it. */
static CUresult cuMemRelease_body(lw_pfn_cuMemRelease_v10020 real, CUmemGenericAllocationHandle h) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    int track = outer && lw_started();
    lw_vmm_ticket t;
    int saved = errno;
    if (track) lw_vmm_release_begin(h, &t);
    errno = saved;
    CUresult r = real(h);
    saved = errno;
    if (track) lw_vmm_release_end(&t, r == CUDA_SUCCESS);
    errno = saved;
    lw_hook_leave();
    return r;
}

static CUresult cuMemRetainAllocationHandle_body(lw_pfn_cuMemRetainAllocationHandle_v11000 real,
                                                 CUmemGenericAllocationHandle *h, void *addr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(h, addr);
    if (outer && r == CUDA_SUCCESS && h && lw_started()) {
        int saved = errno;
        lw_vmm_retained(*h);
        errno = saved;
    }
    lw_hook_leave();
    return r;
}

/* Mappings put physical memory (counted at cuMemCreate) at an address: they
 * count as mapped bytes, and keep the memory alive after its release. The
 * mappings of an imported handle count as imported. */
static CUresult cuMemMap_body(lw_pfn_cuMemMap_v10020 real, CUdeviceptr ptr, size_t size,
                              size_t offset, CUmemGenericAllocationHandle h,
                              unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    CUresult r = real(ptr, size, offset, h, flags);
    if (outer && r == CUDA_SUCCESS) {
        int saved = errno;
        if (lw_started() && lw_vmm_mapped(ptr, size, h)) {
            lw_imports_map_delta((int64_t)size);
            lw_import_mapped(h, offset, size);
        } else {
            lw_totals_mapped((int64_t)size);
        }
        errno = saved;
    }
    lw_hook_leave();
    return r;
}

static CUresult cuMemUnmap_body(lw_pfn_cuMemUnmap_v10020 real, CUdeviceptr ptr, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int outer = lw_hook_enter();
    int track = outer && lw_started();
    lw_vmm_ticket t;
    t.imported_bytes = 0;
    int saved = errno;
    if (track) lw_vmm_unmap_begin(ptr, size, &t);
    errno = saved;
    CUresult r = real(ptr, size);
    saved = errno;
    uint64_t imported = t.imported_bytes;
    if (track) lw_vmm_unmap_end(&t, r == CUDA_SUCCESS);
    errno = saved;
    if (outer && r == CUDA_SUCCESS) {
        lw_totals_mapped(-(int64_t)(size - imported));
        if (imported) lw_imports_map_delta(-(int64_t)imported);
    }
    lw_hook_leave();
    return r;
}

/* cuGetProcAddress: the real lookup, with the caller's exact version and
 * flags; then the wrapper for what it returned. */
static CUresult cuGetProcAddress_v2_body(lw_pfn_cuGetProcAddress_v12000 real, const char *symbol,
                                         void **pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *status) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = lw_wrap_by_base(symbol, version, flags, *pfn, real);
    return r;
}

static CUresult cuGetProcAddress_body(lw_pfn_cuGetProcAddress_v11030 real, const char *symbol,
                                      void **pfn, int version, cuuint64_t flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = lw_wrap_by_base(symbol, version, flags, *pfn, NULL);
    return r;
}

/* ---- slots and exported names ---- */

#define SLOT(NAME, T, P, A, I)                                                                     \
    static CUresult NAME##_slot##I P {                                                             \
        return NAME##_body((T)atomic_load_explicit(&NAME##_real[I], memory_order_acquire),         \
                           UNPAREN A);                                                             \
    }

#define FAMILY(NAME, T, P, A)                                                                      \
    static void *_Atomic NAME##_real[LW_SLOTS];                                                    \
    SLOT(NAME, T, P, A, 0)                                                                         \
    SLOT(NAME, T, P, A, 1)                                                                         \
    SLOT(NAME, T, P, A, 2)                                                                         \
    static void *const NAME##_slots[LW_SLOTS] = {(void *)NAME##_slot0, (void *)NAME##_slot1,       \
                                                 (void *)NAME##_slot2};

/* The function a program linked against libcuda.so.1 calls by name. */
#define EXPORT(EXPNAME, NAME, T, P, A)                                                             \
    static void *_Atomic EXPNAME##_next;                                                           \
    LW_EXPORT CUresult EXPNAME P {                                                                 \
        return NAME##_body((T)lw_driver_next(&EXPNAME##_next, #EXPNAME), UNPAREN A);               \
    }

#define P_ALLOC (CUdeviceptr * dptr, size_t size)
#define A_ALLOC (dptr, size)
FAMILY(cuMemAlloc_v2, lw_pfn_cuMemAlloc_v3020, P_ALLOC, A_ALLOC)
EXPORT(cuMemAlloc_v2, cuMemAlloc_v2, lw_pfn_cuMemAlloc_v3020, P_ALLOC, A_ALLOC)

#define P_PITCH (CUdeviceptr * d, size_t * p, size_t w, size_t h, unsigned int e)
#define A_PITCH (d, p, w, h, e)
FAMILY(cuMemAllocPitch_v2, lw_pfn_cuMemAllocPitch_v3020, P_PITCH, A_PITCH)
EXPORT(cuMemAllocPitch_v2, cuMemAllocPitch_v2, lw_pfn_cuMemAllocPitch_v3020, P_PITCH, A_PITCH)

#define P_MANAGED (CUdeviceptr * d, size_t s, unsigned int f)
#define A_MANAGED (d, s, f)
FAMILY(cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000, P_MANAGED, A_MANAGED)
EXPORT(cuMemAllocManaged, cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000, P_MANAGED, A_MANAGED)

#define P_ASYNC (CUdeviceptr * d, size_t s, CUstream st)
#define A_ASYNC (d, s, st)
FAMILY(cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, P_ASYNC, A_ASYNC)
EXPORT(cuMemAllocAsync, cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, P_ASYNC, A_ASYNC)
EXPORT(cuMemAllocAsync_ptsz, cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, P_ASYNC, A_ASYNC)

#define P_POOL (CUdeviceptr * d, size_t s, CUmemoryPool p, CUstream st)
#define A_POOL (d, s, p, st)
FAMILY(cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020, P_POOL, A_POOL)
EXPORT(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020,
       P_POOL, A_POOL)
EXPORT(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020,
       P_POOL, A_POOL)

#define P_HOSTALLOC (void **pp, size_t s, unsigned int f)
#define A_HOSTALLOC (pp, s, f)
FAMILY(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020, P_HOSTALLOC, A_HOSTALLOC)
EXPORT(cuMemHostAlloc, cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020, P_HOSTALLOC, A_HOSTALLOC)

#define P_ALLOCHOST (void **pp, size_t s)
#define A_ALLOCHOST (pp, s)
FAMILY(cuMemAllocHost_v2, lw_pfn_cuMemAllocHost_v3020, P_ALLOCHOST, A_ALLOCHOST)
EXPORT(cuMemAllocHost_v2, cuMemAllocHost_v2, lw_pfn_cuMemAllocHost_v3020, P_ALLOCHOST, A_ALLOCHOST)

#define P_CREATE                                                                                   \
    (CUmemGenericAllocationHandle * h, size_t s, const CUmemAllocationProp *p, unsigned long long f)
#define A_CREATE (h, s, p, f)
FAMILY(cuMemCreate, lw_pfn_cuMemCreate_v10020, P_CREATE, A_CREATE)
EXPORT(cuMemCreate, cuMemCreate, lw_pfn_cuMemCreate_v10020, P_CREATE, A_CREATE)

#define P_FREE (CUdeviceptr d)
#define A_FREE (d)
FAMILY(cuMemFree_v2, lw_pfn_cuMemFree_v3020, P_FREE, A_FREE)
EXPORT(cuMemFree_v2, cuMemFree_v2, lw_pfn_cuMemFree_v3020, P_FREE, A_FREE)

#define P_FREEASYNC (CUdeviceptr d, CUstream st)
#define A_FREEASYNC (d, st)
FAMILY(cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, P_FREEASYNC, A_FREEASYNC)
EXPORT(cuMemFreeAsync, cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, P_FREEASYNC, A_FREEASYNC)
EXPORT(cuMemFreeAsync_ptsz, cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, P_FREEASYNC, A_FREEASYNC)

#define P_FREEHOST (void *p)
#define A_FREEHOST (p)
FAMILY(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000, P_FREEHOST, A_FREEHOST)
EXPORT(cuMemFreeHost, cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000, P_FREEHOST, A_FREEHOST)

#define P_HOSTREG (void *p, size_t s, unsigned int f)
#define A_HOSTREG (p, s, f)
FAMILY(cuMemHostRegister_v2, lw_pfn_cuMemHostRegister_v6050, P_HOSTREG, A_HOSTREG)
EXPORT(cuMemHostRegister_v2, cuMemHostRegister_v2, lw_pfn_cuMemHostRegister_v6050, P_HOSTREG,
       A_HOSTREG)

#define P_HOSTUNREG (void *p)
#define A_HOSTUNREG (p)
FAMILY(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000, P_HOSTUNREG, A_HOSTUNREG)
EXPORT(cuMemHostUnregister, cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000, P_HOSTUNREG,
       A_HOSTUNREG)

#define P_IPCOPEN (CUdeviceptr * d, CUipcMemHandle h, unsigned int f)
#define A_IPCOPEN (d, h, f)
FAMILY(cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000, P_IPCOPEN, A_IPCOPEN)
EXPORT(cuIpcOpenMemHandle, cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000, P_IPCOPEN,
       A_IPCOPEN)
EXPORT(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000, P_IPCOPEN,
       A_IPCOPEN)

#define P_IPCCLOSE (CUdeviceptr d)
#define A_IPCCLOSE (d)
FAMILY(cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010, P_IPCCLOSE, A_IPCCLOSE)
EXPORT(cuIpcCloseMemHandle, cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010, P_IPCCLOSE,
       A_IPCCLOSE)

#define P_IMPORT (CUmemGenericAllocationHandle * h, void *os, CUmemAllocationHandleType t)
#define A_IMPORT (h, os, t)
FAMILY(cuMemImportFromShareableHandle, lw_pfn_cuMemImportFromShareableHandle_v10020, P_IMPORT,
       A_IMPORT)
EXPORT(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle,
       lw_pfn_cuMemImportFromShareableHandle_v10020, P_IMPORT, A_IMPORT)

#define P_RELEASE (CUmemGenericAllocationHandle h)
#define A_RELEASE (h)
FAMILY(cuMemRelease, lw_pfn_cuMemRelease_v10020, P_RELEASE, A_RELEASE)
EXPORT(cuMemRelease, cuMemRelease, lw_pfn_cuMemRelease_v10020, P_RELEASE, A_RELEASE)

#define P_RETAIN (CUmemGenericAllocationHandle * h, void *a)
#define A_RETAIN (h, a)
FAMILY(cuMemRetainAllocationHandle, lw_pfn_cuMemRetainAllocationHandle_v11000, P_RETAIN, A_RETAIN)
EXPORT(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle,
       lw_pfn_cuMemRetainAllocationHandle_v11000, P_RETAIN, A_RETAIN)

#define P_MAP                                                                                      \
    (CUdeviceptr p, size_t s, size_t o, CUmemGenericAllocationHandle h, unsigned long long f)
#define A_MAP (p, s, o, h, f)
FAMILY(cuMemMap, lw_pfn_cuMemMap_v10020, P_MAP, A_MAP)
EXPORT(cuMemMap, cuMemMap, lw_pfn_cuMemMap_v10020, P_MAP, A_MAP)

#define P_UNMAP (CUdeviceptr p, size_t s)
#define A_UNMAP (p, s)
FAMILY(cuMemUnmap, lw_pfn_cuMemUnmap_v10020, P_UNMAP, A_UNMAP)
EXPORT(cuMemUnmap, cuMemUnmap, lw_pfn_cuMemUnmap_v10020, P_UNMAP, A_UNMAP)

#define P_GPA2                                                                                     \
    (const char *sym, void **pfn, int v, cuuint64_t f, CUdriverProcAddressQueryResult *st)
#define A_GPA2 (sym, pfn, v, f, st)
FAMILY(cuGetProcAddress_v2, lw_pfn_cuGetProcAddress_v12000, P_GPA2, A_GPA2)
EXPORT(cuGetProcAddress_v2, cuGetProcAddress_v2, lw_pfn_cuGetProcAddress_v12000, P_GPA2, A_GPA2)

#define P_GPA (const char *sym, void **pfn, int v, cuuint64_t f)
#define A_GPA (sym, pfn, v, f)
FAMILY(cuGetProcAddress, lw_pfn_cuGetProcAddress_v11030, P_GPA, A_GPA)
EXPORT(cuGetProcAddress, cuGetProcAddress, lw_pfn_cuGetProcAddress_v11030, P_GPA, A_GPA)

/* ---- the lookup table (lookup.c picks from it) ---- */

#define E(NAME, FAMILY_, BASE, MIN, BELOW)                                                         \
    { #NAME, BASE, MIN, BELOW, FAMILY_##_real, FAMILY_##_slots }
const lw_driver_entry lw_driver_entries[] = {
    E(cuMemAlloc_v2, cuMemAlloc_v2, "cuMemAlloc", 3020, 0),
    E(cuMemFree_v2, cuMemFree_v2, "cuMemFree", 3020, 0),
    E(cuMemAllocPitch_v2, cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, 0),
    E(cuMemAllocManaged, cuMemAllocManaged, "cuMemAllocManaged", 6000, 0),
    E(cuMemAllocAsync, cuMemAllocAsync, "cuMemAllocAsync", 11020, 0),
    E(cuMemAllocAsync_ptsz, cuMemAllocAsync, "cuMemAllocAsync", 11020, 0),
    E(cuMemFreeAsync, cuMemFreeAsync, "cuMemFreeAsync", 11020, 0),
    E(cuMemFreeAsync_ptsz, cuMemFreeAsync, "cuMemFreeAsync", 11020, 0),
    E(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0),
    E(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 11020, 0),
    E(cuMemCreate, cuMemCreate, "cuMemCreate", 10020, 0),
    E(cuMemRelease, cuMemRelease, "cuMemRelease", 10020, 0),
    E(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle",
      11000, 0),
    E(cuMemMap, cuMemMap, "cuMemMap", 10020, 0),
    E(cuMemUnmap, cuMemUnmap, "cuMemUnmap", 10020, 0),
    E(cuMemHostAlloc, cuMemHostAlloc, "cuMemHostAlloc", 2020, 0),
    E(cuMemAllocHost_v2, cuMemAllocHost_v2, "cuMemAllocHost", 3020, 0),
    E(cuMemFreeHost, cuMemFreeHost, "cuMemFreeHost", 2000, 0),
    E(cuMemHostRegister_v2, cuMemHostRegister_v2, "cuMemHostRegister", 6050, 0),
    E(cuMemHostUnregister, cuMemHostUnregister, "cuMemHostUnregister", 4000, 0),
    /* The first cuIpcOpenMemHandle (4010) and _v2 (11000) share a signature:
     * one family, a slot each. */
    E(cuIpcOpenMemHandle, cuIpcOpenMemHandle, "cuIpcOpenMemHandle", 4010, 11000),
    E(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, "cuIpcOpenMemHandle", 11000, 0),
    E(cuIpcCloseMemHandle, cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010, 0),
    E(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle,
      "cuMemImportFromShareableHandle", 10020, 0),
    E(cuGetProcAddress_v2, cuGetProcAddress_v2, "cuGetProcAddress", 12000, 0),
    E(cuGetProcAddress, cuGetProcAddress, "cuGetProcAddress", 11030, 12000),
};
const size_t lw_driver_entry_count = sizeof lw_driver_entries / sizeof lw_driver_entries[0];
