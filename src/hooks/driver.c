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
/* cuMemAllocPitch's size: the pitch it chose times the height, or the width
 * asked for when it failed. */
static inline uint64_t pitch_bytes(int ok, const size_t *pitch, size_t width, size_t height) {
    return ok ? (uint64_t)*pitch * height : (uint64_t)width * height;
}
static inline uint64_t handle_out(CUresult r, const CUmemGenericAllocationHandle *h) {
    return r == CUDA_SUCCESS && h ? (uint64_t)*h : 0;
}

/* A body, NAME_body(real, the parameters of hook_list.h's PARAMS): real
 * called with ARGS between lw_hook_enter and lw_hook_leave (guard.h), and one
 * event, in one of two shapes:
 *   AFTER(NAME, PFN, PARAMS, ARGS, EVENT...): an allocation or lookup; EVENT,
 *     the statement that records it, runs after the call and reads the gate
 *     (lw_hook_enter's answer) and r (the call's result);
 *   AROUND(NAME, PFN, PARAMS, ARGS, TICKET, END, BEGIN...): a release; BEGIN
 *     starts it before the call, with lw_hook_enter's answer and &t, the
 *     ticket of type TICKET; END(&t, r) finishes it after the call.
 * Both expand to the code written out: no call, lock or branch more on the
 * path of every allocation. */
#define AFTER(NAME, T, P, A, ...)                                                                  \
    static CUresult NAME##_body(T real, UNPAREN P) {                                               \
        if (!real) return CUDA_ERROR_NOT_INITIALIZED;                                              \
        lw_event_gate gate = lw_hook_enter();                                                      \
        CUresult r = real A;                                                                       \
        __VA_ARGS__;                                                                               \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }
#define AROUND(NAME, T, P, A, TICKET, END, ...)                                                    \
    static CUresult NAME##_body(T real, UNPAREN P) {                                               \
        if (!real) return CUDA_ERROR_NOT_INITIALIZED;                                              \
        TICKET t;                                                                                  \
        __VA_ARGS__;                                                                               \
        CUresult r = real A;                                                                       \
        END(&t, r);                                                                                \
        lw_hook_leave();                                                                           \
        return r;                                                                                  \
    }

AFTER(cuMemAlloc_v2, lw_pfn_cuMemAlloc_v3020, LW_P_ALLOC, LW_A_ALLOC,
      lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, dptr), size))
AFTER(cuMemAllocPitch_v2, lw_pfn_cuMemAllocPitch_v3020, LW_P_PITCH, LW_A_PITCH,
      int ok = r == CUDA_SUCCESS && d && p;
      lw_event_alloc(gate, r, LW_KIND_DEVICE, ok ? *d : 0, pitch_bytes(ok, p, w, h)))
AFTER(cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000, LW_P_MANAGED, LW_A_MANAGED,
      lw_event_alloc(gate, r, LW_KIND_MANAGED, dptr_out(r, d), s))
AFTER(cuMemAllocAsync, lw_pfn_cuMemAllocAsync_v11020, LW_P_ASYNC, LW_A_ASYNC,
      lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, d), s))
AFTER(cuMemAllocFromPoolAsync, lw_pfn_cuMemAllocFromPoolAsync_v11020, LW_P_POOL, LW_A_POOL,
      lw_event_alloc(gate, r, LW_KIND_DEVICE, dptr_out(r, d), s))
AFTER(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020, LW_P_HOSTALLOC, LW_A_HOSTALLOC,
      lw_event_host_alloc(gate, r, host_out(r, pp), s))
AFTER(cuMemAllocHost_v2, lw_pfn_cuMemAllocHost_v3020, LW_P_ALLOCHOST, LW_A_ALLOCHOST,
      lw_event_host_alloc(gate, r, host_out(r, pp), s))
/* Host memory the program allocated, page-locked: pinned host memory until
 * cuMemHostUnregister. */
AFTER(cuMemHostRegister_v2, lw_pfn_cuMemHostRegister_v6050, LW_P_HOSTREG, LW_A_HOSTREG,
      lw_event_host_alloc(gate, r, host_out(r, &p), s))
AFTER(cuMemCreate, lw_pfn_cuMemCreate_v10020, LW_P_CREATE, LW_A_CREATE,
      int device = p && p->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? p->location.id : -1;
      lw_event_vmm_create(gate, r, handle_out(r, h), s, device))
AROUND(cuMemFree_v2, lw_pfn_cuMemFree_v3020, LW_P_FREE, LW_A_FREE, lw_event_free_ticket,
       lw_event_free_end, lw_event_free_begin(lw_hook_enter(), d, &t))
AROUND(cuMemFreeAsync, lw_pfn_cuMemFreeAsync_v11020, LW_P_FREEASYNC, LW_A_FREEASYNC,
       lw_event_free_ticket, lw_event_free_end, lw_event_free_begin(lw_hook_enter(), d, &t))
AROUND(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000, LW_P_HOSTPTR, LW_A_HOSTPTR, lw_event_free_ticket,
       lw_event_free_end, lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t))
AROUND(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000, LW_P_HOSTPTR, LW_A_HOSTPTR,
       lw_event_free_ticket, lw_event_free_end,
       lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)p, &t))
AFTER(cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000, LW_P_IPCOPEN, LW_A_IPCOPEN,
      lw_event_ipc_open(gate, r, dptr_out(r, d)))
AROUND(cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010, LW_P_FREE, LW_A_FREE,
       lw_event_close_ticket, lw_event_ipc_close_end,
       lw_event_ipc_close_begin(lw_hook_enter(), d, &t))
AFTER(cuMemImportFromShareableHandle, lw_pfn_cuMemImportFromShareableHandle_v10020, LW_P_IMPORT,
      LW_A_IMPORT, lw_event_vmm_import(gate, r, handle_out(r, h)))
AROUND(cuMemRelease, lw_pfn_cuMemRelease_v10020, LW_P_HANDLE, LW_A_HANDLE, lw_event_vmm_ticket,
       lw_event_vmm_release_end, lw_event_vmm_release_begin(lw_hook_enter(), h, &t))
AFTER(cuMemRetainAllocationHandle, lw_pfn_cuMemRetainAllocationHandle_v11000, LW_P_RETAIN,
      LW_A_RETAIN, lw_event_vmm_retain(gate, r, handle_out(r, h)))
AFTER(cuMemMap, lw_pfn_cuMemMap_v10020, LW_P_MAP, LW_A_MAP, lw_event_vmm_map(gate, r, p, s, o, h))
AROUND(cuMemUnmap, lw_pfn_cuMemUnmap_v10020, LW_P_UNMAP, LW_A_UNMAP, lw_event_vmm_ticket,
       lw_event_vmm_unmap_end, lw_event_vmm_unmap_begin(lw_hook_enter(), p, s, &t))
#undef AFTER
#undef AROUND

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
