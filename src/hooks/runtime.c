/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA runtime wrappers, for programs that link libcudart.so dynamically
 * (PyTorch's pip wheels do). Each forwards to the function its caller would
 * have reached without leakwatch: the global scope's runtime, or the caller's
 * own when it was loaded RTLD_LOCAL with its own libcudart (Python extension
 * modules), so that two runtimes in one process each get their own callers'
 * calls. The caller is known by the entry it called: each wrapper has its
 * export (the caller found by return address, lw_real_for_caller) and 64
 * hidden per-object entries NAME__k (object slot k, lw_real_for_object),
 * which bind.c writes into each object's own global offset table entries;
 * all of them run lw_hook_NAME, a plain function below.
 *
 * The runtime reaches the driver through our driver wrappers too; the guard
 * (guard.h) makes the runtime call, the outermost, the one that records. A
 * program with the runtime linked in statically never comes here: its driver
 * calls are seen by driver.c instead. */
#include "hooks.h"

#include "bind.h"
#include "events.h"
#include "guard.h"
#include "hook_list.h"
#include "log.h"
#include "real.h"
#include "rep64.h"

#include <stdatomic.h>
#include <string.h>

/* Returned only when no real runtime function exists anywhere in the process
 * (a program that found our export by name without loading libcudart):
 * nothing to pass the call to. A caller whose own scope has none (a tail call
 * from a module, libffi, generated code) is passed to a guessed one instead
 * (lw_real_for_caller). */
#define NO_RUNTIME cudaErrorInitializationError

/* One index per runtime name, for the per-caller cache (hook_list.h). */
#define INDEX(NAME, ...) F_##NAME,
enum { LW_RUNTIME_HOOKS(INDEX, INDEX) F_COUNT };
#undef INDEX
_Static_assert(F_COUNT <= LW_CALLER_FUNCS, "raise LW_CALLER_FUNCS");

#define NAME_OF(NAME, ...) #NAME,
static const char *const names[F_COUNT] = {LW_RUNTIME_HOOKS(NAME_OF, NAME_OF)};
#undef NAME_OF

int lw_export_reaches(const void *ra, const char *name, void *real) {
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, names[i]) == 0) return lw_real_for_caller_nocount(ra, i, name) == real;
    return 1; /* a driver export: one driver per process */
}

static int runtime_index(const char *name) {
    if (name[0] != 'c' || name[1] != 'u' || name[2] != 'd' || name[3] != 'a') return -1;
    for (int i = 0; i < F_COUNT; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return -1;
}

static const char *runtime_name(int f) {
    return f >= 0 && f < F_COUNT ? names[f] : NULL;
}

/* Who called: k >= 0, the object whose own entry was called (bind.c);
 * BOUND, a caller that looked the function up through dlsym on a handle
 * (ctypes' CDLL("libcudart.so").cudaMalloc) and got one of the slots below,
 * bound to the real function found there, which ra then is; else the
 * return address of the call of our export. */
#define BOUND (-2)
typedef struct {
    int k;
    const void *ra;
} caller;

/* The real NAME for the caller. */
static void *real_for(caller c, int f) {
    if (c.k == BOUND) return (void *)c.ra;
    return c.k >= 0 ? lw_real_for_object(c.k, f, names[f]) : lw_real_for_caller(c.ra, f, names[f]);
}

/* ---- the hooks: the real call, then one event (track/events.h) ----
 *
 * lw_hook_NAME(caller, NAME's parameters) is the work of the wrapped
 * function NAME, once for its export, its per-object entries and its slots
 * (generated at the end of this file from hook_list.h): the real NAME for
 * the caller, called between lw_hook_enter and lw_hook_leave (guard.h), its
 * result passed back unchanged, and one event: an allocation's after the
 * call (it reads the gate, lw_hook_enter's answer, and the result); a
 * release's begun before the call (with the gate and a ticket) and ended
 * after it. */

/* Each hook's declaration, from its row of hook_list.h: a hook whose
 * definition below disagrees with its row does not build. Not inlined: one
 * copy of the work for the export and its 64 entries and slots. */
#define DECLARE(NAME, TYPE, PARAMS, ARGS)                                                          \
    __attribute__((noinline)) static cudaError_t lw_hook_##NAME(caller c, LW_UNPAREN PARAMS);
#define NO_DECLARATION(NAME)
LW_RUNTIME_HOOKS(DECLARE, NO_DECLARATION)
#undef DECLARE
#undef NO_DECLARATION

/* What an allocation call gave back, read only when it succeeded. */
static inline uint64_t out(cudaError_t r, void *const *p) {
    return r == cudaSuccess && p ? (uint64_t)(uintptr_t)*p : 0;
}

static cudaError_t lw_hook_cudaMalloc(caller c, void **ptr, size_t size) {
    lw_rt_cudaMalloc real = (lw_rt_cudaMalloc)real_for(c, F_cudaMalloc);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

/* A per-thread-stream (_ptsz) hook is its plain one's, with its own real
 * function (index F_NAME_ptsz). */
static cudaError_t lw_hook_cudaMallocAsync(caller c, void **ptr, size_t size, cudaStream_t s) {
    lw_rt_cudaMallocAsync real = (lw_rt_cudaMallocAsync)real_for(c, F_cudaMallocAsync);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, s);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr), size);
    lw_hook_leave();
    return r;
}
static cudaError_t lw_hook_cudaMallocAsync_ptsz(caller c, void **ptr, size_t size, cudaStream_t s) {
    lw_rt_cudaMallocAsync real = (lw_rt_cudaMallocAsync)real_for(c, F_cudaMallocAsync_ptsz);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, s);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaMallocFromPoolAsync(caller c, void **ptr, size_t size,
                                                   cudaMemPool_t pool, cudaStream_t s) {
    lw_rt_cudaMallocFromPoolAsync real =
        (lw_rt_cudaMallocFromPoolAsync)real_for(c, F_cudaMallocFromPoolAsync);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, pool, s);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr), size);
    lw_hook_leave();
    return r;
}
static cudaError_t lw_hook_cudaMallocFromPoolAsync_ptsz(caller c, void **ptr, size_t size,
                                                        cudaMemPool_t pool, cudaStream_t s) {
    lw_rt_cudaMallocFromPoolAsync real =
        (lw_rt_cudaMallocFromPoolAsync)real_for(c, F_cudaMallocFromPoolAsync_ptsz);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, pool, s);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaMallocManaged(caller c, void **ptr, size_t size,
                                             unsigned int flags) {
    lw_rt_cudaMallocManaged real = (lw_rt_cudaMallocManaged)real_for(c, F_cudaMallocManaged);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, flags);
    lw_event_alloc(gate, r, LW_KIND_MANAGED, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

/* The size: the pitch chosen times the height, or the width asked for when
 * it failed. */
static cudaError_t lw_hook_cudaMallocPitch(caller c, void **ptr, size_t *pitch, size_t width,
                                           size_t height) {
    lw_rt_cudaMallocPitch real = (lw_rt_cudaMallocPitch)real_for(c, F_cudaMallocPitch);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, pitch, width, height);
    lw_event_alloc(gate, r, LW_KIND_DEVICE, out(r, ptr),
                   (r == cudaSuccess && pitch ? *pitch * height : width * height));
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaMallocHost(caller c, void **ptr, size_t size) {
    lw_rt_cudaMallocHost real = (lw_rt_cudaMallocHost)real_for(c, F_cudaMallocHost);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size);
    lw_event_host_alloc(gate, r, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaHostAlloc(caller c, void **ptr, size_t size, unsigned int flags) {
    lw_rt_cudaHostAlloc real = (lw_rt_cudaHostAlloc)real_for(c, F_cudaHostAlloc);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, flags);
    lw_event_host_alloc(gate, r, out(r, ptr), size);
    lw_hook_leave();
    return r;
}

/* Host memory the program allocated, page-locked (PyTorch's
 * pinned_use_cuda_host_register): pinned host memory until unregistered. */
static cudaError_t lw_hook_cudaHostRegister(caller c, void *ptr, size_t size, unsigned int flags) {
    lw_rt_cudaHostRegister real = (lw_rt_cudaHostRegister)real_for(c, F_cudaHostRegister);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, size, flags);
    lw_event_host_alloc(gate, r, (uint64_t)(uintptr_t)ptr, size);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaFree(caller c, void *ptr) {
    lw_rt_cudaFree real = (lw_rt_cudaFree)real_for(c, F_cudaFree);
    if (!real) return NO_RUNTIME;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaFreeAsync(caller c, void *ptr, cudaStream_t s) {
    lw_rt_cudaFreeAsync real = (lw_rt_cudaFreeAsync)real_for(c, F_cudaFreeAsync);
    if (!real) return NO_RUNTIME;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr, s);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}
static cudaError_t lw_hook_cudaFreeAsync_ptsz(caller c, void *ptr, cudaStream_t s) {
    lw_rt_cudaFreeAsync real = (lw_rt_cudaFreeAsync)real_for(c, F_cudaFreeAsync_ptsz);
    if (!real) return NO_RUNTIME;
    lw_event_free_ticket t;
    lw_event_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr, s);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaFreeHost(caller c, void *ptr) {
    lw_rt_cudaFreeHost real = (lw_rt_cudaFreeHost)real_for(c, F_cudaFreeHost);
    if (!real) return NO_RUNTIME;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaHostUnregister(caller c, void *ptr) {
    lw_rt_cudaHostUnregister real = (lw_rt_cudaHostUnregister)real_for(c, F_cudaHostUnregister);
    if (!real) return NO_RUNTIME;
    lw_event_free_ticket t;
    lw_event_host_free_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr);
    lw_event_free_end(&t, r);
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaIpcOpenMemHandle(caller c, void **ptr, cudaIpcMemHandle_t handle,
                                                unsigned int flags) {
    lw_rt_cudaIpcOpenMemHandle real =
        (lw_rt_cudaIpcOpenMemHandle)real_for(c, F_cudaIpcOpenMemHandle);
    if (!real) return NO_RUNTIME;
    lw_event_gate gate = lw_hook_enter();
    cudaError_t r = real(ptr, handle, flags);
    lw_event_ipc_open(gate, r, out(r, ptr));
    lw_hook_leave();
    return r;
}

static cudaError_t lw_hook_cudaIpcCloseMemHandle(caller c, void *ptr) {
    lw_rt_cudaIpcCloseMemHandle real =
        (lw_rt_cudaIpcCloseMemHandle)real_for(c, F_cudaIpcCloseMemHandle);
    if (!real) return NO_RUNTIME;
    lw_event_close_ticket t;
    lw_event_ipc_close_begin(lw_hook_enter(), (uint64_t)(uintptr_t)ptr, &t);
    cudaError_t r = real(ptr);
    lw_event_ipc_close_end(&t, r);
    lw_hook_leave();
    return r;
}

/* cudaGetDriverEntryPoint*: the runtime answers through the driver's
 * cuGetProcAddress, which it found through us, so what comes back is usually
 * our wrapper already; lw_wrap_by_base leaves those alone (and maps our
 * exports, which an interposable driver hands out, to the driver's own).
 * No event. */
/* The version of the runtime the caller uses (never asked for a BOUND
 * caller: lw_runtime_bind hands out no slot of these). */
static int runtime_version(caller c) {
    lw_rt_cudaRuntimeGetVersion fn =
        (lw_rt_cudaRuntimeGetVersion)(c.k >= 0
                                          ? lw_real_for_object_nocount(c.k, F_cudaRuntimeGetVersion,
                                                                       "cudaRuntimeGetVersion")
                                          : lw_real_for_caller_nocount(c.ra,
                                                                       F_cudaRuntimeGetVersion,
                                                                       "cudaRuntimeGetVersion"));
    int v = 0;
    if (!fn || fn(&v) != cudaSuccess) return 0;
    return v;
}

static cudaError_t lw_hook_cudaGetDriverEntryPoint(caller c, const char *symbol, void **fp,
                                                   unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult *status) {
    lw_rt_cudaGetDriverEntryPoint real =
        (lw_rt_cudaGetDriverEntryPoint)real_for(c, F_cudaGetDriverEntryPoint);
    if (!real) return NO_RUNTIME;
    cudaError_t r = real(symbol, fp, flags, status);
    if (r == cudaSuccess && symbol && fp && *fp) {
        int v = runtime_version(c);
        if (v > 0) *fp = lw_wrap_by_base(symbol, v, flags, *fp, NULL);
    }
    return r;
}
static cudaError_t
lw_hook_cudaGetDriverEntryPoint_ptsz(caller c, const char *symbol, void **fp,
                                     unsigned long long flags,
                                     enum cudaDriverEntryPointQueryResult *status) {
    lw_rt_cudaGetDriverEntryPoint real =
        (lw_rt_cudaGetDriverEntryPoint)real_for(c, F_cudaGetDriverEntryPoint_ptsz);
    if (!real) return NO_RUNTIME;
    cudaError_t r = real(symbol, fp, flags, status);
    if (r == cudaSuccess && symbol && fp && *fp) {
        int v = runtime_version(c);
        if (v > 0) *fp = lw_wrap_by_base(symbol, v, flags, *fp, NULL);
    }
    return r;
}

static cudaError_t
lw_hook_cudaGetDriverEntryPointByVersion(caller c, const char *symbol, void **fp,
                                         unsigned int version, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *status) {
    lw_rt_cudaGetDriverEntryPointByVersion real =
        (lw_rt_cudaGetDriverEntryPointByVersion)real_for(c, F_cudaGetDriverEntryPointByVersion);
    if (!real) return NO_RUNTIME;
    cudaError_t r = real(symbol, fp, version, flags, status);
    if (r == cudaSuccess && symbol && fp && *fp)
        *fp = lw_wrap_by_base(symbol, (int)version, flags, *fp, NULL);
    return r;
}
static cudaError_t
lw_hook_cudaGetDriverEntryPointByVersion_ptsz(caller c, const char *symbol, void **fp,
                                              unsigned int version, unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *status) {
    lw_rt_cudaGetDriverEntryPointByVersion real = (lw_rt_cudaGetDriverEntryPointByVersion)real_for(
        c, F_cudaGetDriverEntryPointByVersion_ptsz);
    if (!real) return NO_RUNTIME;
    cudaError_t r = real(symbol, fp, version, flags, status);
    if (r == cudaSuccess && symbol && fp && *fp)
        *fp = lw_wrap_by_base(symbol, (int)version, flags, *fp, NULL);
    return r;
}

/* ---- the exports, the per-object entries and the slots, from hook_list.h ---- */

/* Object k's own entry for NAME (hidden: only bind.c hands it out). */
#define ENTRY(NAME, PARAMS, ARGS, k)                                                               \
    static cudaError_t NAME##__##k PARAMS {                                                        \
        return lw_hook_##NAME((caller){k, NULL}, LW_UNPAREN ARGS);                                 \
    }
#define ENTRY_ADDRESS(NAME, PARAMS, ARGS, k) (void *)NAME##__##k,

/* The export (callers found by return address: not bound yet, dlsym's
 * answer, libffi, generated code), of CUDA's type for it, and the per-object
 * entries, around lw_hook_NAME, which does the work once for all of them. */
#define ENTRIES(NAME, TYPE, PARAMS, ARGS)                                                          \
    LW_EXPORT cudaError_t NAME PARAMS {                                                            \
        lw_bind_poll();                                                                            \
        return lw_hook_##NAME((caller){-1, __builtin_return_address(0)}, LW_UNPAREN ARGS);         \
    }                                                                                              \
    LW_HAS_CUDA_TYPE(NAME, TYPE)                                                                   \
    LW_REP64(ENTRY, NAME, PARAMS, ARGS)                                                            \
    static void *const NAME##_entries[LW_CALLER_OBJECTS] = {                                       \
        LW_REP64(ENTRY_ADDRESS, NAME, PARAMS, ARGS)};
#define NO_ENTRIES(NAME)
LW_RUNTIME_HOOKS(ENTRIES, NO_ENTRIES)
#undef ENTRIES
#undef ENTRY_ADDRESS
#undef ENTRY

/* The slots (wrappers bound to one real function each, filled first come
 * first served) that dlsym hands out for a runtime function looked up in a
 * handle: one per runtime in the process, and an interposer's. */
#define RT_SLOTS 4
#define SLOT(NAME, PARAMS, ARGS, I)                                                                \
    static cudaError_t NAME##__s##I PARAMS {                                                       \
        return lw_hook_##NAME(                                                                     \
            (caller){BOUND, atomic_load_explicit(&NAME##_bound[I], memory_order_acquire)},         \
            LW_UNPAREN ARGS);                                                                      \
    }
#define SLOTS(NAME, TYPE, PARAMS, ARGS)                                                            \
    static void *_Atomic NAME##_bound[RT_SLOTS];                                                   \
    SLOT(NAME, PARAMS, ARGS, 0)                                                                    \
    SLOT(NAME, PARAMS, ARGS, 1)                                                                    \
    SLOT(NAME, PARAMS, ARGS, 2)                                                                    \
    SLOT(NAME, PARAMS, ARGS, 3)                                                                    \
    static void *const NAME##_slots[RT_SLOTS] = {(void *)NAME##__s0, (void *)NAME##__s1,           \
                                                 (void *)NAME##__s2, (void *)NAME##__s3};
LW_RUNTIME_HOOKS(SLOTS, NO_ENTRIES)
#undef SLOTS
#undef SLOT

/* Each wrapped name's entries, by index; the names only looked up have none. */
#define ENTRIES_OF(NAME, ...) [F_##NAME] = NAME##_entries,
static void *const *const entries[F_COUNT] = {LW_RUNTIME_HOOKS(ENTRIES_OF, NO_ENTRIES)};
#undef ENTRIES_OF

#define SLOTS_OF(NAME, ...) [F_##NAME] = {NAME##_bound, NAME##_slots},
static const struct {
    void *_Atomic *bound;
    void *const *slots;
} bound_slots[F_COUNT] = {LW_RUNTIME_HOOKS(SLOTS_OF, NO_ENTRIES)};
#undef SLOTS_OF

void *lw_runtime_bind(const char *name, void *fn) {
    int f = fn ? runtime_index(name) : -1;
    /* Not wrapped (looked up only), or ours already. The entry points need
     * the caller's runtime version, which a slot does not know: the runtime
     * answers them through our cuGetProcAddress anyway. */
    if (f < 0 || !bound_slots[f].bound || lw_is_own_address((uintptr_t)fn) ||
        f == F_cudaGetDriverEntryPoint || f == F_cudaGetDriverEntryPoint_ptsz ||
        f == F_cudaGetDriverEntryPointByVersion || f == F_cudaGetDriverEntryPointByVersion_ptsz)
        return fn;
    for (int i = 0; i < RT_SLOTS; i++) {
        void *cur = atomic_load_explicit(&bound_slots[f].bound[i], memory_order_acquire);
        if (cur == fn) return bound_slots[f].slots[i];
        if (!cur) {
            void *expected = NULL;
            /* The object fn lies in stays loaded while the slot holds it. */
            lw_keep_loaded(fn);
            if (atomic_compare_exchange_strong(&bound_slots[f].bound[i], &expected, fn) ||
                expected == fn)
                return bound_slots[f].slots[i];
        }
    }
    lw_keep_loaded(fn);
    lw_log_once(rt_slots_full,
                "more than %d different %s functions were looked up by handle; the later ones "
                "are passed through untracked",
                RT_SLOTS, names[f]);
    return fn;
}

static void *runtime_entry(int f, int k) {
    if (f < 0 || f >= F_COUNT || k < 0 || k >= LW_CALLER_OBJECTS || !entries[f]) return NULL;
    return entries[f][k];
}

/* Each loaded object's references to our exports bound to its own entries
 * (bind.c), from the library's start. */
__attribute__((constructor)) static void start_binding(void) {
    static const lw_bind_runtime rt = {runtime_index, runtime_name, runtime_entry};
    lw_bind_start(&rt);
}
