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
 * signature, each keep their own real function.
 *
 * The wrapped functions are listed once, in hook_list.h: the slots, the
 * exports and the lookup table below are generated from that list. Each body
 * is the real call and one event (track/events.h), which decides what is
 * recorded. */
#include "hooks.h"

#include "events.h"
#include "guard.h"
#include "hook_list.h"
#include "lookup.h"
#include "real.h"

#include <stdatomic.h>
#include <string.h>

#define UNPAREN(...) __VA_ARGS__

/* ---- the wrappers: the real call, then one event (track/events.h) ---- */

/* What an allocation call gave back, read only when it succeeded. */
static inline uint64_t dptr_out(CUresult r, const CUdeviceptr *p) {
    return r == CUDA_SUCCESS && p ? (uint64_t)*p : 0;
}
static inline uint64_t host_out(CUresult r, void *const *p) {
    return r == CUDA_SUCCESS && p ? (uint64_t)(uintptr_t)*p : 0;
}
static inline uint64_t handle_out(CUresult r, const CUmemGenericAllocationHandle *h) {
    return r == CUDA_SUCCESS && h ? (uint64_t)*h : 0;
}

static CUresult cuMemAlloc_v2_body(lw_pfn_cuMemAlloc_v3020 real, CUdeviceptr *dptr, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, size);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAllocPitch_v2_body(lw_pfn_cuMemAllocPitch_v3020 real, CUdeviceptr *dptr,
                                        size_t *pitch, size_t width, size_t height,
                                        unsigned int elem) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, pitch, width, height, elem);
    int ok = r == CUDA_SUCCESS && dptr && pitch;
    lw_event_alloc(gate, r, LW_KIND_DEVICE, ok ? *dptr : 0,
                   ok ? (uint64_t)*pitch * height : (uint64_t)width * height);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAllocManaged_body(lw_pfn_cuMemAllocManaged_v6000 real, CUdeviceptr *dptr,
                                       size_t size, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, size, flags);
    lw_event_alloc(gate, r, LW_KIND_MANAGED, dptr_out(r, dptr), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAllocAsync_body(lw_pfn_cuMemAllocAsync_v11020 real, CUdeviceptr *dptr,
                                     size_t size, CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, size, stream);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAllocFromPoolAsync_body(lw_pfn_cuMemAllocFromPoolAsync_v11020 real,
                                             CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                             CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, size, pool, stream);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemHostAlloc_body(lw_pfn_cuMemHostAlloc_v2020 real, void **pp, size_t size,
                                    unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(pp, size, flags);
    lw_event_host_alloc(gate, r, host_out(r, pp), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemAllocHost_v2_body(lw_pfn_cuMemAllocHost_v3020 real, void **pp, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(pp, size);
    lw_event_host_alloc(gate, r, host_out(r, pp), size);
    lw_hook_leave();
    return r;
}

/* Host memory the program allocated, page-locked: pinned host memory until
 * cuMemHostUnregister. */
static CUresult cuMemHostRegister_v2_body(lw_pfn_cuMemHostRegister_v6050 real, void *p, size_t size,
                                          unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(p, size, flags);
    lw_event_host_alloc(gate, r, host_out(r, &p), size);
    lw_hook_leave();
    return r;
}

static CUresult cuMemCreate_body(lw_pfn_cuMemCreate_v10020 real, CUmemGenericAllocationHandle *h,
                                 size_t size, const CUmemAllocationProp *prop,
                                 unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(h, size, prop, flags);
    int device =
        prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    lw_event_vmm_create(gate, r, handle_out(r, h), size, device);
    lw_hook_leave();
    return r;
}

static CUresult cuMemFree_v2_body(lw_pfn_cuMemFree_v3020 real, CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult cuMemFreeAsync_body(lw_pfn_cuMemFreeAsync_v11020 real, CUdeviceptr dptr,
                                    CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr, stream);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult cuMemFreeHost_body(lw_pfn_cuMemFreeHost_v2000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t);
    CUresult r = real(p);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult cuMemHostUnregister_body(lw_pfn_cuMemHostUnregister_v4000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t);
    CUresult r = real(p);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult cuIpcOpenMemHandle_body(lw_pfn_cuIpcOpenMemHandle_v11000 real, CUdeviceptr *dptr,
                                        CUipcMemHandle handle, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, handle, flags);
    lw_event_ipc_open(gate, r, dptr_out(r, dptr));
    lw_hook_leave();
    return r;
}

static CUresult cuIpcCloseMemHandle_body(lw_pfn_cuIpcCloseMemHandle_v4010 real, CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_close_ticket t;
    lw_event_ipc_close_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr);
    lw_event_ipc_close_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult
cuMemImportFromShareableHandle_body(lw_pfn_cuMemImportFromShareableHandle_v10020 real,
                                    CUmemGenericAllocationHandle *h, void *os_handle,
                                    CUmemAllocationHandleType type) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(h, os_handle, type);
    lw_event_vmm_import(gate, r, handle_out(r, h));
    lw_hook_leave();
    return r;
}

static CUresult cuMemRelease_body(lw_pfn_cuMemRelease_v10020 real, CUmemGenericAllocationHandle h) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_vmm_ticket t;
    lw_event_vmm_release_begin(lw_hook_enter(), h, &t);
    CUresult r = real(h);
    lw_event_vmm_release_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult cuMemRetainAllocationHandle_body(lw_pfn_cuMemRetainAllocationHandle_v11000 real,
                                                 CUmemGenericAllocationHandle *h, void *addr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(h, addr);
    lw_event_vmm_retain(gate, r, handle_out(r, h));
    lw_hook_leave();
    return r;
}

static CUresult cuMemMap_body(lw_pfn_cuMemMap_v10020 real, CUdeviceptr ptr, size_t size,
                              size_t offset, CUmemGenericAllocationHandle h,
                              unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(ptr, size, offset, h, flags);
    lw_event_vmm_map(gate, r, ptr, size, offset, h);
    lw_hook_leave();
    return r;
}

static CUresult cuMemUnmap_body(lw_pfn_cuMemUnmap_v10020 real, CUdeviceptr ptr, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_vmm_ticket t;
    lw_event_vmm_unmap_begin(lw_hook_enter(), ptr, size, &t);
    CUresult r = real(ptr, size);
    lw_event_vmm_unmap_end(&t, r);
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

/* ---- slots, exports and the lookup table, from hook_list.h ---- */

#define SLOT(NAME, T, P, A, I)                                                                     \
    static CUresult NAME##_slot##I P {                                                             \
        return NAME##_body((T)atomic_load_explicit(&NAME##_real[I], memory_order_acquire),         \
                           UNPAREN A);                                                             \
    }

/* The function a program linked against libcuda.so.1 calls by name. */
#define EXPORT(EXPNAME, NAME, T, P, A)                                                             \
    static void *_Atomic EXPNAME##_next;                                                           \
    LW_EXPORT CUresult EXPNAME P {                                                                 \
        return NAME##_body((T)lw_driver_next(&EXPNAME##_next, #EXPNAME), UNPAREN A);               \
    }

#define FAMILY(NAME, T, P, A, BASE, MIN, BELOW)                                                    \
    static void *_Atomic NAME##_real[LW_SLOTS];                                                    \
    SLOT(NAME, T, P, A, 0)                                                                         \
    SLOT(NAME, T, P, A, 1)                                                                         \
    SLOT(NAME, T, P, A, 2)                                                                         \
    static void *const NAME##_slots[LW_SLOTS] = {(void *)NAME##_slot0, (void *)NAME##_slot1,       \
                                                 (void *)NAME##_slot2};                            \
    EXPORT(NAME, NAME, T, P, A)
#define ALIAS(EXPNAME, NAME, T, P, A, BASE, MIN, BELOW) EXPORT(EXPNAME, NAME, T, P, A)
LW_DRIVER_HOOKS(FAMILY, ALIAS)
#undef FAMILY
#undef ALIAS

#define FAMILY(NAME, T, P, A, BASE, MIN, BELOW)                                                    \
    {#NAME, BASE, MIN, BELOW, NAME##_real, NAME##_slots},
#define ALIAS(EXPNAME, NAME, T, P, A, BASE, MIN, BELOW)                                            \
    {#EXPNAME, BASE, MIN, BELOW, NAME##_real, NAME##_slots},
const lw_driver_entry lw_driver_entries[] = {LW_DRIVER_HOOKS(FAMILY, ALIAS)};
#undef FAMILY
#undef ALIAS
const size_t lw_driver_entry_count = sizeof lw_driver_entries / sizeof lw_driver_entries[0];
