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
 * The wrapped functions are listed once, in hook_list.h: the hooks'
 * declarations, the slots, the exports and the lookup table below are
 * generated from that list. Each hook, lw_hook_NAME, is a plain function
 * below: the real call and one event (track/events.h), which decides what is
 * recorded. */
#include "hooks.h"

#include "events.h"
#include "guard.h"
#include "hook_list.h"
#include "lookup.h"
#include "real.h"

#include <stdatomic.h>
#include <string.h>

/* ---- the hooks: the real call, then one event (track/events.h) ----
 *
 * lw_hook_NAME(real, NAME's parameters) is the work of the wrapped function
 * NAME, for every way a caller reaches it (the export, the slots the lookups
 * hand out, generated at the end of this file from hook_list.h): real, the
 * real function the caller would have reached without leakwatch, called
 * between lw_hook_enter and lw_hook_leave (guard.h), its result passed back
 * unchanged, and one event: an allocation's after the call (it reads the
 * gate, lw_hook_enter's answer, and the result); a release's begun before
 * the call (with the gate and a ticket) and ended after it. */

/* Each hook's declaration, from its row of hook_list.h: a hook whose
 * definition below disagrees with its row does not build. */
#define DECLARE(NAME, TYPE, PARAMS, ...)                                                           \
    static CUresult lw_hook_##NAME(TYPE real, LW_UNPAREN PARAMS);
#define NO_DECLARATION(...)
LW_DRIVER_HOOKS(DECLARE, NO_DECLARATION)
#undef DECLARE
#undef NO_DECLARATION

/* What an allocation call gave back, read only when it succeeded. */
static inline uint64_t dptr_out(CUresult r, const CUdeviceptr *p) {
    return r == CUDA_SUCCESS && p ? (uint64_t)*p : 0;
}
static inline uint64_t host_out(CUresult r, void *const *p) {
    return r == CUDA_SUCCESS && p ? (uint64_t)(uintptr_t)*p : 0;
}
/* cuMemAllocPitch's size: the pitch it chose times the height, or the width
 * asked for when it failed. */
static inline uint64_t pitch_bytes(int ok, const size_t *pitch, size_t width, size_t height) {
    return ok ? (uint64_t)*pitch * height : (uint64_t)width * height;
}
static inline uint64_t handle_out(CUresult r, const CUmemGenericAllocationHandle *h) {
    return r == CUDA_SUCCESS && h ? (uint64_t)*h : 0;
}

static CUresult lw_hook_cuMemAlloc_v2(lw_pfn_cuMemAlloc_v3020 real, CUdeviceptr *dptr,
                                      size_t bytesize) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, bytesize);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), bytesize);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemAllocPitch_v2(lw_pfn_cuMemAllocPitch_v3020 real, CUdeviceptr *dptr,
                                           size_t *pitch, size_t width, size_t height,
                                           unsigned int element_size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, pitch, width, height, element_size);
    int ok = r == CUDA_SUCCESS && dptr && pitch;
    lw_event_alloc(gate, r, LW_KIND_DEVICE, ok ? *dptr : 0, pitch_bytes(ok, pitch, width, height));
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemAllocManaged(lw_pfn_cuMemAllocManaged_v6000 real, CUdeviceptr *dptr,
                                          size_t bytesize, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, bytesize, flags);
    lw_event_alloc(gate, r, LW_KIND_MANAGED, dptr_out(r, dptr), bytesize);
    lw_hook_leave();
    return r;
}

/* Also cuMemAllocAsync_ptsz (hook_list.h's ALIAS), with its own slots. */
static CUresult lw_hook_cuMemAllocAsync(lw_pfn_cuMemAllocAsync_v11020 real, CUdeviceptr *dptr,
                                        size_t bytesize, CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, bytesize, stream);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), bytesize);
    lw_hook_leave();
    return r;
}

/* Also cuMemAllocFromPoolAsync_ptsz. */
static CUresult lw_hook_cuMemAllocFromPoolAsync(lw_pfn_cuMemAllocFromPoolAsync_v11020 real,
                                                CUdeviceptr *dptr, size_t bytesize,
                                                CUmemoryPool pool, CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(dptr, bytesize, pool, stream);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), bytesize);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemHostAlloc(lw_pfn_cuMemHostAlloc_v2020 real, void **pp, size_t bytesize,
                                       unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(pp, bytesize, flags);
    lw_event_host_alloc(gate, r, host_out(r, pp), bytesize);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemAllocHost_v2(lw_pfn_cuMemAllocHost_v3020 real, void **pp,
                                          size_t bytesize) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(pp, bytesize);
    lw_event_host_alloc(gate, r, host_out(r, pp), bytesize);
    lw_hook_leave();
    return r;
}

/* Host memory the program allocated, page-locked: pinned host memory until
 * cuMemHostUnregister. */
static CUresult lw_hook_cuMemHostRegister_v2(lw_pfn_cuMemHostRegister_v6050 real, void *p,
                                             size_t bytesize, unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(p, bytesize, flags);
    lw_event_host_alloc(gate, r, host_out(r, &p), bytesize);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemCreate(lw_pfn_cuMemCreate_v10020 real,
                                    CUmemGenericAllocationHandle *handle, size_t size,
                                    const CUmemAllocationProp *prop, unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(handle, size, prop, flags);
    int device =
        prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
    lw_event_vmm_create(gate, r, handle_out(r, handle), size, device);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemFree_v2(lw_pfn_cuMemFree_v3020 real, CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

/* Also cuMemFreeAsync_ptsz. */
static CUresult lw_hook_cuMemFreeAsync(lw_pfn_cuMemFreeAsync_v11020 real, CUdeviceptr dptr,
                                       CUstream stream) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr, stream);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemFreeHost(lw_pfn_cuMemFreeHost_v2000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t);
    CUresult r = real(p);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemHostUnregister(lw_pfn_cuMemHostUnregister_v4000 real, void *p) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t);
    CUresult r = real(p);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

/* Also cuIpcOpenMemHandle_v2. */
static CUresult lw_hook_cuIpcOpenMemHandle(lw_pfn_cuIpcOpenMemHandle_v11000 real,
                                           CUdeviceptr *pdptr, CUipcMemHandle handle,
                                           unsigned int flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(pdptr, handle, flags);
    lw_event_ipc_open(gate, r, dptr_out(r, pdptr));
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuIpcCloseMemHandle(lw_pfn_cuIpcCloseMemHandle_v4010 real,
                                            CUdeviceptr dptr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_close_ticket t;
    lw_event_ipc_close_begin(lw_hook_enter(), dptr, &t);
    CUresult r = real(dptr);
    lw_event_ipc_close_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult
lw_hook_cuMemImportFromShareableHandle(lw_pfn_cuMemImportFromShareableHandle_v10020 real,
                                       CUmemGenericAllocationHandle *handle, void *os_handle,
                                       CUmemAllocationHandleType handle_type) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(handle, os_handle, handle_type);
    lw_event_vmm_import(gate, r, handle_out(r, handle));
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemRelease(lw_pfn_cuMemRelease_v10020 real,
                                     CUmemGenericAllocationHandle handle) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_vmm_ticket t;
    lw_event_vmm_release_begin(lw_hook_enter(), handle, &t);
    CUresult r = real(handle);
    lw_event_vmm_release_end(&t, r);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemRetainAllocationHandle(lw_pfn_cuMemRetainAllocationHandle_v11000 real,
                                                    CUmemGenericAllocationHandle *handle,
                                                    void *addr) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(handle, addr);
    lw_event_vmm_retain(gate, r, handle_out(r, handle));
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemMap(lw_pfn_cuMemMap_v10020 real, CUdeviceptr ptr, size_t size,
                                 size_t offset, CUmemGenericAllocationHandle handle,
                                 unsigned long long flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_gate gate = lw_hook_enter();
    CUresult r = real(ptr, size, offset, handle, flags);
    lw_event_vmm_map(gate, r, ptr, size, offset, handle);
    lw_hook_leave();
    return r;
}

static CUresult lw_hook_cuMemUnmap(lw_pfn_cuMemUnmap_v10020 real, CUdeviceptr ptr, size_t size) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    lw_event_vmm_ticket t;
    lw_event_vmm_unmap_begin(lw_hook_enter(), ptr, size, &t);
    CUresult r = real(ptr, size);
    lw_event_vmm_unmap_end(&t, r);
    lw_hook_leave();
    return r;
}

/* cuGetProcAddress: the real lookup, with the caller's exact version and
 * flags; then the wrapper for what it returned. No event. */
static CUresult lw_hook_cuGetProcAddress_v2(lw_pfn_cuGetProcAddress_v12000 real, const char *symbol,
                                            void **pfn, int version, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *status) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = lw_wrap_by_base(symbol, version, flags, *pfn, real);
    return r;
}

static CUresult lw_hook_cuGetProcAddress(lw_pfn_cuGetProcAddress_v11030 real, const char *symbol,
                                         void **pfn, int version, cuuint64_t flags) {
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, version, flags);
    if (r == CUDA_SUCCESS && symbol && pfn && *pfn)
        *pfn = lw_wrap_by_base(symbol, version, flags, *pfn, NULL);
    return r;
}

/* ---- slots, exports and the lookup table, from hook_list.h ---- */

/* Slot I of NAME: lw_hook_NAME with the real function the slot was bound to. */
#define SLOT(NAME, TYPE, PARAMS, ARGS, I)                                                          \
    static CUresult NAME##_slot##I PARAMS {                                                        \
        return lw_hook_##NAME((TYPE)atomic_load_explicit(&NAME##_real[I], memory_order_acquire),   \
                              LW_UNPAREN ARGS);                                                    \
    }

/* The function a program linked against libcuda.so.1 calls by name, of
 * CUDA's type for it. */
#define EXPORT(EXPNAME, NAME, TYPE, PARAMS, ARGS)                                                  \
    static void *_Atomic EXPNAME##_next;                                                           \
    LW_EXPORT CUresult EXPNAME PARAMS {                                                            \
        return lw_hook_##NAME((TYPE)lw_driver_next(&EXPNAME##_next, #EXPNAME), LW_UNPAREN ARGS);   \
    }                                                                                              \
    LW_HAS_CUDA_TYPE(EXPNAME, TYPE)

#define FAMILY(NAME, TYPE, PARAMS, ARGS, BASE, MIN, BELOW)                                         \
    static void *_Atomic NAME##_real[LW_SLOTS];                                                    \
    SLOT(NAME, TYPE, PARAMS, ARGS, 0)                                                              \
    SLOT(NAME, TYPE, PARAMS, ARGS, 1)                                                              \
    SLOT(NAME, TYPE, PARAMS, ARGS, 2)                                                              \
    static void *const NAME##_slots[LW_SLOTS] = {(void *)NAME##_slot0, (void *)NAME##_slot1,       \
                                                 (void *)NAME##_slot2};                            \
    EXPORT(NAME, NAME, TYPE, PARAMS, ARGS)
#define ALIAS(EXPNAME, NAME, TYPE, PARAMS, ARGS, BASE, MIN, BELOW)                                 \
    EXPORT(EXPNAME, NAME, TYPE, PARAMS, ARGS)
LW_DRIVER_HOOKS(FAMILY, ALIAS)
#undef FAMILY
#undef ALIAS
#undef EXPORT
#undef SLOT

#define FAMILY(NAME, TYPE, PARAMS, ARGS, BASE, MIN, BELOW)                                         \
    {#NAME, BASE, MIN, BELOW, NAME##_real, NAME##_slots},
#define ALIAS(EXPNAME, NAME, TYPE, PARAMS, ARGS, BASE, MIN, BELOW)                                 \
    {#EXPNAME, BASE, MIN, BELOW, NAME##_real, NAME##_slots},
static const lw_driver_entry entries[] = {LW_DRIVER_HOOKS(FAMILY, ALIAS)};
#undef FAMILY
#undef ALIAS
static const lw_driver_table table = {entries, sizeof entries / sizeof entries[0]};

void *lw_wrap_by_base(const char *symbol, int cuda_version, cuuint64_t flags, void *fn,
                      lw_pfn_cuGetProcAddress_v12000 query_v2) {
    return lw_lookup_by_base(&table, symbol, cuda_version, flags, fn, query_v2);
}

void *lw_wrap_by_name(const char *versioned_name, void *fn) {
    return lw_lookup_by_name(&table, versioned_name, fn);
}
