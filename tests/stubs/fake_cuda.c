/* SPDX-License-Identifier: Apache-2.0 */
/* CPU stand-in for the CUDA driver, libcuda.so.1 (tests only).
 *
 * It exports the real library's versioned entry points (cuMemAlloc_v2,
 * cuMemAllocAsync_ptsz, ...) and resolves cuGetProcAddress lookups by base
 * name + version + flags the way the real driver does, so that leakwatch's
 * hooks see the same symbols and pointers they will see on a GPU machine.
 *
 * Device memory is host memory: addresses come from one reserved range of the
 * address space (as the real driver's UVA range is; MAP_NORESERVE, so tests can
 * "allocate" many GiB), whose pages become readable and writable when
 * allocated, so that a runtime's copies and real clients (PyTorch) work on it.
 * What is real is also the bookkeeping a leak detector depends
 * on: per-device usage against a limit, out-of-memory errors, address reuse
 * after a free, errors for unknown or double frees, per-thread contexts.
 * Pinned host memory is real memory.
 *
 * Built three times: build/tests/lib/libcuda.so.1; with
 * -DLW_FAKE_CUDA_NO_PROC_ADDRESS build/tests/lib-legacy/libcuda.so.1, a driver
 * without cuGetProcAddress* that makes the runtime fall back to dlsym; and
 * with -DLW_FAKE_CUDA_INTERPOSABLE build/tests/lib-interposable/libcuda.so.1,
 * whose cuGetProcAddress hands out addresses of its exported functions (which
 * a preloaded library of the same names replaces), not internal ones. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <uthash.h>

#include "fake_common.h"
#include "fake_cuda_internal.h"

/* ---- call counters (test hook fake_cuda_calls) ---- */

#define FAKE_ENTRY_POINTS(X)                                                                       \
    X(cuInit)                                                                                      \
    X(cuDriverGetVersion)                                                                          \
    X(cuDeviceGetCount)                                                                            \
    X(cuDeviceGet)                                                                                 \
    X(cuDevicePrimaryCtxRetain)                                                                    \
    X(cuDevicePrimaryCtxRelease_v2)                                                                \
    X(cuDevicePrimaryCtxGetState)                                                                  \
    X(cuCtxSetCurrent)                                                                             \
    X(cuCtxGetCurrent)                                                                             \
    X(cuCtxPushCurrent_v2)                                                                         \
    X(cuCtxPopCurrent_v2)                                                                          \
    X(cuCtxGetDevice)                                                                              \
    X(cuCtxGetDevice_v2)                                                                           \
    X(cuCtxSynchronize)                                                                            \
    X(cuMemGetInfo)                                                                                \
    X(cuMemGetInfo_v2)                                                                             \
    X(cuMemAlloc)                                                                                  \
    X(cuMemAlloc_v2)                                                                               \
    X(cuMemFree)                                                                                   \
    X(cuMemFree_v2)                                                                                \
    X(cuMemAllocPitch_v2)                                                                          \
    X(cuMemAllocManaged)                                                                           \
    X(cuMemAllocAsync)                                                                             \
    X(cuMemAllocAsync_ptsz)                                                                        \
    X(cuMemFreeAsync)                                                                              \
    X(cuMemFreeAsync_ptsz)                                                                         \
    X(cuMemAllocFromPoolAsync)                                                                     \
    X(cuMemAllocFromPoolAsync_ptsz)                                                                \
    X(cuMemGetAllocationGranularity)                                                               \
    X(cuMemCreate)                                                                                 \
    X(cuMemRelease)                                                                                \
    X(cuMemAddressReserve)                                                                         \
    X(cuMemAddressFree)                                                                            \
    X(cuMemRetainAllocationHandle)                                                                 \
    X(cuMemMap)                                                                                    \
    X(cuMemUnmap)                                                                                  \
    X(cuMemSetAccess)                                                                              \
    X(cuMemGetAddressRange_v2)                                                                     \
    X(cuIpcGetMemHandle)                                                                           \
    X(cuIpcOpenMemHandle)                                                                          \
    X(cuIpcOpenMemHandle_v2)                                                                       \
    X(cuIpcCloseMemHandle)                                                                         \
    X(cuMemExportToShareableHandle)                                                                \
    X(cuMemImportFromShareableHandle)                                                              \
    X(cuMemHostAlloc)                                                                              \
    X(cuMemAllocHost_v2)                                                                           \
    X(cuMemFreeHost)                                                                               \
    X(cuMemHostRegister_v2)                                                                        \
    X(cuMemHostUnregister)                                                                         \
    X(cuGetExportTable)                                                                            \
    X(cuGetProcAddress)                                                                            \
    X(cuGetProcAddress_v2)

enum fake_entry {
#define X(name) E_##name,
    FAKE_ENTRY_POINTS(X)
#undef X
        E_COUNT
};

static const char *const entry_names[E_COUNT] = {
#define X(name) #name,
    FAKE_ENTRY_POINTS(X)
#undef X
};

static atomic_ulong calls[E_COUNT];

#define COUNT(name) atomic_fetch_add_explicit(&calls[E_##name], 1, memory_order_relaxed)

/* ---- configuration (environment, read once) ---- */

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static int n_devices;
static size_t mem_limit;
static bool fail_export_table;

static size_t parse_bytes(const char *s, size_t dflt) {
    if (s == NULL || *s == '\0') return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) return dflt;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    case 't':
    case 'T':
        shift = 40;
        break;
    case '\0':
        break;
    default:
        return dflt;
    }
    if (shift != 0 && end[1] != '\0') return dflt;
    if (shift != 0 && v > (SIZE_MAX >> shift)) return dflt;
    return (size_t)(v << shift);
}

static void read_config(void) {
    n_devices = FAKE_DEFAULT_DEVICES;
    const char *s = getenv("FAKE_CUDA_DEVICES");
    if (s != NULL && *s != '\0') {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 0) n_devices = v > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (int)v;
    }
    mem_limit = parse_bytes(getenv("FAKE_CUDA_MEM_BYTES"), FAKE_DEFAULT_MEM_BYTES);
    s = getenv("FAKE_CUDA_FAIL_EXPORT_TABLE");
    fail_export_table = s != NULL && strcmp(s, "1") == 0;
}

static void config(void) {
    pthread_once(&config_once, read_config);
}

/* ---- initialisation and contexts ---- */

static atomic_bool initialized;

/* The primary context of device d is this fake handle; nothing dereferences it.
 * Per-thread, as the driver's current context is. */
#define CTX_BASE ((uintptr_t)0x1000)
static __thread CUcontext current_ctx;

static bool valid_device(int dev) {
    return dev >= 0 && dev < n_devices;
}

static bool ctx_device(CUcontext ctx, int *dev) {
    uintptr_t v = (uintptr_t)ctx;
    if (v < CTX_BASE || v >= CTX_BASE + (uintptr_t)n_devices) return false;
    *dev = (int)(v - CTX_BASE);
    return true;
}

static CUresult need_init(void) {
    config();
    return atomic_load(&initialized) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

/* Most memory calls act on the calling thread's current context, and fail
 * without one: a thread that never made a context current cannot allocate. */
static CUresult need_ctx(int *dev) {
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (current_ctx == NULL || !ctx_device(current_ctx, dev)) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

/* ---- address space ----
 * One PROT_NONE reservation holds the fake device addresses, so they can never
 * collide with a real host pointer (pinned memory included) in this process. */

#define ARENA_DEV 0 /* cuMemAlloc*, managed, async */
#define ARENA_VA 1  /* cuMemAddressReserve */
#define ARENA_V1 2  /* v1 cuMemAlloc: 32-bit addresses */
#define N_ARENAS 3

#define ARENA_SPAN ((uintptr_t)4 << 40) /* 4 TiB each for device and VA arenas */
/* The least span each, when the address space has no room for ARENA_SPAN:
 * room for every device's default memory many times over. */
#define MIN_ARENA_SPAN ((uintptr_t)256 << 30)
#define ARENA_HINT ((uintptr_t)0x600000000000)
#define V1_SPAN ((uintptr_t)512 << 20)
#define V1_LIMIT ((uintptr_t)1 << 32)

struct arena {
    uintptr_t base, next, end;
    bool ready;
    bool backed; /* base..end is our own reservation: pages can be made accessible */
};

static struct arena arenas[N_ARENAS];

static void *reserve_span(uintptr_t hint, uintptr_t span) {
    void *p =
        mmap((void *)hint, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Called with the lock held. */
static bool arena_ready(int id) {
    struct arena *a = &arenas[id];
    if (a->ready) return a->end > a->base;
    a->ready = true;
    if (id == ARENA_V1) {
        void *p = reserve_span(0x10000000, V1_SPAN);
        if (p != NULL && (uintptr_t)p + V1_SPAN > V1_LIMIT) {
            munmap(p, V1_SPAN); /* no room below 4 GiB: v1 allocations fail */
            p = NULL;
        }
        if (p != NULL) {
            a->base = a->next = (uintptr_t)p;
            a->end = a->base + V1_SPAN;
            a->backed = true;
        }
        return a->end > a->base;
    }
    /* Device and VA arenas share one reservation: 2 x ARENA_SPAN, else the
     * largest half, quarter, ... of it down to 2 x MIN_ARENA_SPAN that the
     * address space has room for. Under ThreadSanitizer only its application
     * ranges can be mapped (a hint elsewhere is ignored) and the largest
     * holds about 1 TiB: without the smaller tries the memory was plain
     * numbers there, and a program that writes device memory faulted. */
    const char *no_reserve = getenv("FAKE_CUDA_NO_RESERVE");
    uintptr_t base = 0, span = ARENA_SPAN;
    for (; !(no_reserve && *no_reserve == '1') && span >= MIN_ARENA_SPAN; span /= 2)
        if ((base = (uintptr_t)reserve_span(ARENA_HINT, 2 * span)) != 0) break;
    bool backed = base != 0;
    if (base == 0) {
        base = ARENA_HINT; /* cannot reserve: plain numbers still work */
        span = ARENA_SPAN;
    }
    arenas[ARENA_DEV] = (struct arena){base, base, base + span, true, backed};
    arenas[ARENA_VA] = (struct arena){base + span, base + span, base + 2 * span, true, backed};
    return true;
}

/* Device memory is host memory, so that a runtime's cudaMemcpy/cudaMemset
 * (and real clients such as PyTorch) can read and write it: an allocation's
 * pages become readable and writable in the reservation (MAP_NORESERVE, so
 * an 80 GiB device costs nothing until touched). Allocations share pages
 * (512-byte alignment), so a free gives back only the pages wholly inside it
 * (zeroed, as fresh memory) and leaves them accessible. */
static void pages_open(int arena, uintptr_t addr, size_t size) {
    if (!arenas[arena].backed) return;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = addr & ~(pg - 1), hi = (addr + size + pg - 1) & ~(pg - 1);
    (void)mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
}

static void pages_release(int arena, uintptr_t addr, size_t size, bool close) {
    if (!arenas[arena].backed) return;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (addr + pg - 1) & ~(pg - 1), hi = (addr + size) & ~(pg - 1);
    if (hi <= lo) return;
    (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
    if (close) (void)mprotect((void *)lo, hi - lo, PROT_NONE);
}

/* ---- bookkeeping (all under `lock`) ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A program that forks while other threads allocate (tests/programs/
 * rt_safety_fork.c) must not hand its child this lock held: the real driver
 * is unusable after fork, but leakwatch's tests run CUDA calls in the child
 * to check that the child's report is its own. */
static void fork_prepare(void) {
    pthread_mutex_lock(&lock);
}
static void fork_release(void) {
    pthread_mutex_unlock(&lock);
}
__attribute__((constructor)) static void register_fork_handlers(void) {
    pthread_atfork(fork_prepare, fork_release, fork_release);
}
static size_t used[FAKE_MAX_DEVICES];

struct dev_alloc {
    uintptr_t addr;
    size_t size; /* rounded */
    int dev;
    int arena;
    UT_hash_handle hh;
};

/* Freed addresses, LIFO per (arena, rounded size): a later allocation of the
 * same size gets the most recently freed address back, as real allocators
 * often do, and tests rely on it. Sizes are multiples of 512, so the arena
 * fits in the key's low bits. */
struct free_list {
    uint64_t key;
    uintptr_t *addrs;
    size_t n, cap;
    UT_hash_handle hh;
};

struct host_alloc {
    void *ptr;
    size_t size;
    UT_hash_handle hh;
};

struct phys {
    CUmemGenericAllocationHandle id;
    size_t size;
    int dev;
    bool imported;       /* another process's memory: not counted in used[] here */
    bool exportable;     /* created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR */
    uint64_t origin_pid; /* imported: the exporter, and its handle there */
    uint64_t origin_id;
    unsigned refs;   /* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
    unsigned mapped; /* live cuMemMap mappings; memory is freed when both are 0 */
    UT_hash_handle hh;
};

struct reservation {
    uintptr_t addr;
    size_t size;
    UT_hash_handle hh;
};

struct mapping {
    uintptr_t addr;
    size_t size;
    struct phys *phys;
    UT_hash_handle hh;
};

static struct dev_alloc *allocs;
static struct free_list *free_lists;
static struct host_alloc *host_allocs;
static struct host_alloc *host_registered; /* cuMemHostRegister ranges */
static struct phys *physs;
static struct reservation *reservations;
static struct mapping *mappings;
static CUmemGenericAllocationHandle next_handle = 1;

static uint64_t free_key(int arena, size_t size) {
    return (uint64_t)size | (uint64_t)arena;
}

static bool push_free(int arena, size_t size, uintptr_t addr) {
    uint64_t key = free_key(arena, size);
    struct free_list *fl = NULL;
    HASH_FIND(hh, free_lists, &key, sizeof key, fl);
    if (fl == NULL) {
        fl = calloc(1, sizeof *fl);
        if (fl == NULL) return false;
        fl->key = key;
        HASH_ADD(hh, free_lists, key, sizeof fl->key, fl);
    }
    if (fl->n == fl->cap) {
        size_t cap = fl->cap ? fl->cap * 2 : 8;
        uintptr_t *a = realloc(fl->addrs, cap * sizeof *a);
        if (a == NULL) return false; /* the address is lost to reuse, nothing worse */
        fl->addrs = a;
        fl->cap = cap;
    }
    fl->addrs[fl->n++] = addr;
    return true;
}

/* Most recently freed address of this size that is a multiple of align. */
static uintptr_t pop_free(int arena, size_t size, size_t align) {
    uint64_t key = free_key(arena, size);
    struct free_list *fl = NULL;
    HASH_FIND(hh, free_lists, &key, sizeof key, fl);
    if (fl == NULL) return 0;
    for (size_t i = fl->n; i-- > 0;) {
        uintptr_t a = fl->addrs[i];
        if (a % align == 0) {
            memmove(&fl->addrs[i], &fl->addrs[i + 1], (fl->n - i - 1) * sizeof *fl->addrs);
            fl->n--;
            return a;
        }
    }
    return 0;
}

static uintptr_t bump(int arena, size_t size, size_t align) {
    struct arena *a = &arenas[arena];
    uintptr_t p = (a->next + align - 1) & ~(uintptr_t)(align - 1);
    if (p < a->next || p > a->end || a->end - p < size) return 0;
    a->next = p + size;
    return p;
}

static bool round_size(size_t size, size_t *rounded) {
    if (size == 0 || size > SIZE_MAX - (FAKE_ALLOC_ALIGN - 1)) return false;
    *rounded = (size + FAKE_ALLOC_ALIGN - 1) & ~(FAKE_ALLOC_ALIGN - 1);
    return true;
}

/* Device memory of `size` bytes on dev, from the given arena. */
/* Set on a thread once it allocates: cuMemGetInfo calls made on such a
 * thread are counted apart (fake_cuda_calls("cuMemGetInfo_v2@allocating")),
 * so a test can tell that an interposer asks for free memory on the
 * program's allocating threads. */
static __thread bool allocating_thread;
static atomic_ulong meminfo_on_allocating;

static CUresult dev_alloc(int dev, size_t size, int arena, uintptr_t *out) {
    allocating_thread = true;
    size_t rounded;
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (!round_size(size, &rounded)) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct dev_alloc *rec = NULL;
    if (rounded > mem_limit - used[dev]) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (!arena_ready(arena)) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((rec = calloc(1, sizeof *rec)) == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        uintptr_t addr = pop_free(arena, rounded, FAKE_ALLOC_ALIGN);
        if (addr == 0) addr = bump(arena, rounded, FAKE_ALLOC_ALIGN);
        if (addr == 0) {
            free(rec); /* address space exhausted, as fragmentation would */
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            rec->addr = addr;
            rec->size = rounded;
            rec->dev = dev;
            rec->arena = arena;
            HASH_ADD(hh, allocs, addr, sizeof rec->addr, rec);
            used[dev] += rounded;
            *out = addr;
            pages_open(arena, addr, rounded);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* An exported allocation that is freed: a later one at its address gets
 * another IPC handle (defined with the IPC functions below). */
static void forget_export(uintptr_t addr);

/* Unknown or already-freed pointers are CUDA_ERROR_INVALID_VALUE, as on the
 * real driver: a leak detector must pass such frees through, not hide them. */
static CUresult dev_free(uintptr_t addr) {
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct dev_alloc *rec = NULL;
    HASH_FIND(hh, allocs, &addr, sizeof addr, rec);
    if (rec == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        HASH_DEL(allocs, rec);
        used[rec->dev] -= rec->size;
        forget_export(addr);
        pages_release(rec->arena, rec->addr, rec->size, false);
        push_free(rec->arena, rec->size, rec->addr);
        free(rec);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult alloc_current(CUdeviceptr *dptr, size_t bytesize) {
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t addr = 0;
    r = dev_alloc(dev, bytesize, ARENA_DEV, &addr);
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr)addr;
    return r;
}

static CUresult free_current(CUdeviceptr dptr) {
    int dev;
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (dptr == 0) return CUDA_SUCCESS; /* cuMemFree(0) is a no-op */
    r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    return dev_free((uintptr_t)dptr);
}

/* ---- version, devices, contexts ---- */

CUresult cuInit(unsigned int Flags) {
    COUNT(cuInit);
    config();
    /* FAKE_CUDA_INIT_HANG_MS=N: a driver whose initialization hangs (a GPU
     * in a bad state): cuInit returns after N ms. */
    const char *hang = getenv("FAKE_CUDA_INIT_HANG_MS");
    if (hang) {
        long ms = atol(hang);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0) {
        }
    }
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (n_devices == 0) return CUDA_ERROR_NO_DEVICE; /* what a machine without a GPU answers */
    atomic_store(&initialized, true);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion) {
    COUNT(cuDriverGetVersion);
    if (driverVersion == NULL) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = FAKE_DRIVER_VERSION; /* works before cuInit, as the real one */
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    COUNT(cuDeviceGetCount);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
    *count = n_devices;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    COUNT(cuDeviceGet);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

/* References on each device's primary context: active while any is held. */
static atomic_int primary_refs[FAKE_MAX_DEVICES];

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    COUNT(cuDevicePrimaryCtxRetain);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    atomic_fetch_add(&primary_refs[dev], 1);
    *pctx = (CUcontext)(CTX_BASE + (uintptr_t)dev);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    COUNT(cuDevicePrimaryCtxRelease_v2);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    int n = atomic_load(&primary_refs[dev]);
    do {
        if (n <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    } while (!atomic_compare_exchange_weak(&primary_refs[dev], &n, n - 1));
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
    COUNT(cuDevicePrimaryCtxGetState);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = atomic_load(&primary_refs[dev]) > 0;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    COUNT(cuCtxSetCurrent);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    int dev;
    if (ctx != NULL && !ctx_device(ctx, &dev)) return CUDA_ERROR_INVALID_CONTEXT;
    current_ctx = ctx; /* NULL unbinds, as documented */
    return CUDA_SUCCESS;
}

/* The context stack under the current context (cuCtxPushCurrent). */
#define CTX_STACK 16
static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth;

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
    COUNT(cuCtxPushCurrent_v2);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    int dev;
    if (ctx == NULL || !ctx_device(ctx, &dev)) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = current_ctx;
    current_ctx = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
    COUNT(cuCtxPopCurrent_v2);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (current_ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx != NULL) *pctx = current_ctx;
    current_ctx = ctx_depth > 0 ? ctx_stack[--ctx_depth] : NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
    COUNT(cuCtxGetCurrent);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx; /* NULL, with success, when the thread has none */
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device) {
    COUNT(cuCtxGetDevice);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    *device = dev;
    return CUDA_SUCCESS;
}

/* CUDA 13's cuCtxGetDevice_v2: what cuGetProcAddress("cuCtxGetDevice", 13000) returns. */
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
    COUNT(cuCtxGetDevice_v2);
    int dev;
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (ctx == NULL) {
        r = need_ctx(&dev);
        if (r != CUDA_SUCCESS) return r;
    } else if (!ctx_device(ctx, &dev)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *device = dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    COUNT(cuCtxSynchronize);
    int dev;
    return need_ctx(&dev);
}

/* ---- device memory ---- */

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    COUNT(cuMemGetInfo_v2);
    if (allocating_thread) atomic_fetch_add(&meminfo_on_allocating, 1);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *free_bytes = mem_limit - used[dev];
    *total = mem_limit;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* v1 (before CUDA 3.2): 32-bit sizes, clamped as the real one does. */
CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total) {
    COUNT(cuMemGetInfo);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    size_t f = mem_limit - used[dev], t = mem_limit;
    pthread_mutex_unlock(&lock);
    *free_bytes = f > UINT32_MAX ? UINT32_MAX : (unsigned int)f;
    *total = t > UINT32_MAX ? UINT32_MAX : (unsigned int)t;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
    COUNT(cuMemAlloc_v2);
    return alloc_current(dptr, bytesize);
}

/* v1: 32-bit device pointers, so these come from a range below 4 GiB. */
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
    COUNT(cuMemAlloc);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (dptr == NULL) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t addr = 0;
    r = dev_alloc(dev, bytesize, ARENA_V1, &addr);
    if (r == CUDA_SUCCESS) *dptr = (CUdeviceptr_v1)addr;
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
    COUNT(cuMemFree_v2);
    return free_current(dptr);
}

CUresult cuMemFree(CUdeviceptr_v1 dptr) {
    COUNT(cuMemFree);
    return free_current((CUdeviceptr)dptr);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
    COUNT(cuMemAllocPitch_v2);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    /* Rows padded to 512 bytes, the usual texture pitch alignment. */
    if (WidthInBytes > SIZE_MAX - (FAKE_ALLOC_ALIGN - 1)) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t pitch = (WidthInBytes + FAKE_ALLOC_ALIGN - 1) & ~(FAKE_ALLOC_ALIGN - 1);
    if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t addr = 0;
    r = dev_alloc(dev, pitch * Height, ARENA_DEV, &addr);
    if (r == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)addr;
        *pPitch = pitch;
    }
    return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
    COUNT(cuMemAllocManaged);
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
        CUresult r = need_init();
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    }
    return alloc_current(dptr, bytesize);
}

/* Stream-ordered allocation. The stream is not checked: every stream value a
 * test passes (0, legacy, per-thread, a fake handle) is accepted. Freed memory
 * goes back at once; the pool's release threshold is not modelled. */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    COUNT(cuMemAllocAsync);
    return alloc_current(dptr, bytesize);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
    COUNT(cuMemAllocAsync_ptsz);
    return alloc_current(dptr, bytesize);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
    COUNT(cuMemFreeAsync);
    return free_current(dptr);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
    COUNT(cuMemFreeAsync_ptsz);
    return free_current(dptr);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool) {
    if (pool == NULL) {
        CUresult r = need_init();
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    }
    return alloc_current(dptr, bytesize); /* any non-NULL pool: the current device's */
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
    COUNT(cuMemAllocFromPoolAsync);
    return alloc_from_pool(dptr, bytesize, pool);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
    COUNT(cuMemAllocFromPoolAsync_ptsz);
    return alloc_from_pool(dptr, bytesize, pool);
}

/* ---- virtual memory management ---- */

static bool valid_prop(const CUmemAllocationProp *prop, CUresult *err) {
    if (prop == NULL || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        *err = CUDA_ERROR_INVALID_VALUE;
        return false;
    }
    if (!valid_device(prop->location.id)) {
        *err = CUDA_ERROR_INVALID_DEVICE;
        return false;
    }
    return true;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
    COUNT(cuMemGetAllocationGranularity);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (granularity == NULL || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                                option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_prop(prop, &r)) return r;
    *granularity = FAKE_VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
    COUNT(cuMemCreate);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (handle == NULL || flags != 0 || size == 0 || size % FAKE_VMM_GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!valid_prop(prop, &r)) return r;
    int dev = prop->location.id;
    pthread_mutex_lock(&lock);
    struct phys *p = NULL;
    if (size > mem_limit - used[dev]) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if ((p = calloc(1, sizeof *p)) == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        p->id = next_handle++;
        p->refs = 1;
        p->size = size;
        p->dev = dev;
        p->exportable =
            (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0;
        HASH_ADD(hh, physs, id, sizeof p->id, p);
        used[dev] += size;
        *handle = p->id;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Called with the lock held: the memory goes once every reference to the
 * handle is released and no mapping uses it any more, as documented for
 * cuMemRelease ("freed when all outstanding mappings to the memory are
 * unmapped and when all outstanding references to the handle ... are also
 * released"). Until then the handle stays valid (it can be retained again
 * from a mapped address). */
static void phys_maybe_free(struct phys *p) {
    if (p->refs != 0 || p->mapped != 0) return;
    if (!p->imported) used[p->dev] -= p->size;
    HASH_DEL(physs, p);
    free(p);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
    COUNT(cuMemRelease);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    struct phys *p = NULL;
    HASH_FIND(hh, physs, &handle, sizeof handle, p);
    if (p == NULL || p->refs == 0) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        p->refs--;
        phys_maybe_free(p);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static bool overlaps(uintptr_t a, size_t asz, uintptr_t b, size_t bsz) {
    return a < b + bsz && b < a + asz;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
    COUNT(cuMemAddressReserve);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    const size_t page = 4096;
    if (ptr == NULL || flags != 0 || size == 0 || size % page != 0 || addr % page != 0 ||
        (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > FAKE_VMM_GRANULARITY ? alignment : FAKE_VMM_GRANULARITY;
    pthread_mutex_lock(&lock);
    struct reservation *res = NULL;
    uintptr_t where = 0;
    if (!arena_ready(ARENA_VA) || (res = calloc(1, sizeof *res)) == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        struct arena *a = &arenas[ARENA_VA];
        /* The hint is honoured when it lies in untouched space (typically right
         * after the previous reservation, to grow it); otherwise ignored, as
         * the real driver may. */
        if (addr != 0 && addr % align == 0 && addr >= a->next && addr <= a->end &&
            a->end - addr >= size) {
            where = (uintptr_t)addr;
            a->next = where + size;
        }
        if (where == 0) where = pop_free(ARENA_VA, size, align);
        if (where == 0) where = bump(ARENA_VA, size, align);
        if (where == 0) {
            free(res);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            res->addr = where;
            res->size = size;
            HASH_ADD(hh, reservations, addr, sizeof res->addr, res);
            *ptr = (CUdeviceptr)where;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
    COUNT(cuMemAddressFree);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    uintptr_t addr = (uintptr_t)ptr;
    pthread_mutex_lock(&lock);
    struct reservation *res = NULL;
    HASH_FIND(hh, reservations, &addr, sizeof addr, res);
    if (res == NULL || res->size != size) {
        r = CUDA_ERROR_INVALID_VALUE; /* must match a reservation exactly */
    } else {
        struct mapping *m, *tmp;
        HASH_ITER(hh, mappings, m, tmp) {
            if (overlaps(m->addr, m->size, res->addr, res->size)) {
                r = CUDA_ERROR_INVALID_VALUE; /* still mapped: unmap first */
                break;
            }
        }
        if (r == CUDA_SUCCESS) {
            HASH_DEL(reservations, res);
            push_free(ARENA_VA, res->size, res->addr);
            free(res);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static struct reservation *reservation_holding(uintptr_t addr, size_t size) {
    struct reservation *res, *tmp;
    HASH_ITER(hh, reservations, res, tmp) {
        if (addr >= res->addr && size <= res->size && addr - res->addr <= res->size - size)
            return res;
    }
    return NULL;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
    COUNT(cuMemMap);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    uintptr_t addr = (uintptr_t)ptr;
    if (flags != 0 || size == 0 || addr % FAKE_VMM_GRANULARITY != 0 ||
        size % FAKE_VMM_GRANULARITY != 0 || offset % FAKE_VMM_GRANULARITY != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct phys *p = NULL;
    struct mapping *m = NULL, *tmp;
    HASH_FIND(hh, physs, &handle, sizeof handle, p);
    if (p == NULL || p->refs == 0 || offset > p->size || p->size - offset < size ||
        reservation_holding(addr, size) == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        HASH_ITER(hh, mappings, m, tmp) {
            if (overlaps(m->addr, m->size, addr, size)) {
                r = CUDA_ERROR_INVALID_VALUE; /* only unmapped ranges can be mapped */
                break;
            }
        }
        if (r == CUDA_SUCCESS) {
            if ((m = calloc(1, sizeof *m)) == NULL) {
                r = CUDA_ERROR_OUT_OF_MEMORY;
            } else {
                m->addr = addr;
                m->size = size;
                m->phys = p;
                p->mapped++;
                HASH_ADD(hh, mappings, addr, sizeof m->addr, m);
                pages_open(ARENA_VA, addr, size);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* The range must cover whole mappings (one or more): a mapping cannot be
 * partly unmapped. */
/* The handle behind a mapped address, with one more reference that the
 * caller must release (the same handle value that was mapped). */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
    COUNT(cuMemRetainAllocationHandle);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (handle == NULL) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t a = (uintptr_t)addr;
    pthread_mutex_lock(&lock);
    struct mapping *m, *tmp, *found = NULL;
    HASH_ITER(hh, mappings, m, tmp) {
        if (a >= m->addr && a - m->addr < m->size) {
            found = m;
            break;
        }
    }
    if (found == NULL) {
        r = CUDA_ERROR_INVALID_VALUE; /* not mapped */
    } else {
        found->phys->refs++;
        *handle = found->phys->id;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
    COUNT(cuMemUnmap);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    uintptr_t addr = (uintptr_t)ptr;
    if (size == 0 || addr > UINTPTR_MAX - size) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct mapping *m, *tmp;
    size_t found = 0;
    HASH_ITER(hh, mappings, m, tmp) {
        if (!overlaps(m->addr, m->size, addr, size)) continue;
        if (m->addr < addr || m->addr + m->size > addr + size) {
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        found++;
    }
    if (r == CUDA_SUCCESS && found == 0) r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        HASH_ITER(hh, mappings, m, tmp) {
            if (!overlaps(m->addr, m->size, addr, size)) continue;
            HASH_DEL(mappings, m);
            m->phys->mapped--;
            pages_release(ARENA_VA, m->addr, m->size, true);
            phys_maybe_free(m->phys);
            free(m);
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
    COUNT(cuMemSetAccess);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    uintptr_t addr = (uintptr_t)ptr;
    if (desc == NULL || count == 0 || size == 0 || addr > UINTPTR_MAX - size)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
        if (!valid_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    /* Every byte of the range must be mapped (mappings never overlap). */
    pthread_mutex_lock(&lock);
    size_t covered = 0;
    struct mapping *m, *tmp;
    HASH_ITER(hh, mappings, m, tmp) {
        if (!overlaps(m->addr, m->size, addr, size)) continue;
        uintptr_t lo = m->addr > addr ? m->addr : addr;
        uintptr_t hi = m->addr + m->size < addr + size ? m->addr + m->size : addr + size;
        covered += hi - lo;
    }
    pthread_mutex_unlock(&lock);
    return covered == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- interprocess memory ----
 * An IPC handle names one cuMemAlloc allocation of one process: its pid, a
 * serial number (a later allocation at the same address gets another handle),
 * its size and device. Opening it maps the exporter's memory into this
 * process at an address of this process's choosing; the memory is the
 * exporter's and is not counted in this process's usage. As on the real
 * driver: opening a handle of this very process fails with
 * CUDA_ERROR_INVALID_CONTEXT ("invalid device context"); opening a handle the
 * process opened before returns the same address and takes one more
 * reference; cuIpcCloseMemHandle drops one, and the mapping goes with the
 * last. The exporter's memory is not real here, so nothing is shared but the
 * bookkeeping. */

#define IPC_MAGIC 0x4c57495043ULL /* "LWIPC" */
struct ipc_handle_data {
    uint64_t magic, pid, serial, size;
    int32_t dev;
};
_Static_assert(sizeof(struct ipc_handle_data) <= sizeof(CUipcMemHandle), "IPC handle");

struct ipc_open {
    uintptr_t addr;
    uint64_t pid, serial; /* what was opened */
    size_t size;
    int dev;
    unsigned refs;
    UT_hash_handle hh;
};
static struct ipc_open *ipc_opens;
static uint64_t next_serial = 1;

/* The serial of each live allocation that was exported (by address). */
struct ipc_export {
    uintptr_t addr;
    uint64_t serial;
    UT_hash_handle hh;
};
static struct ipc_export *ipc_exports;

/* Called with the lock held. */
static void forget_export(uintptr_t addr) {
    struct ipc_export *e = NULL;
    HASH_FIND(hh, ipc_exports, &addr, sizeof addr, e);
    if (e != NULL) {
        HASH_DEL(ipc_exports, e);
        free(e);
    }
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr) {
    COUNT(cuIpcGetMemHandle);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pHandle == NULL) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t addr = (uintptr_t)dptr;
    pthread_mutex_lock(&lock);
    struct dev_alloc *rec = NULL;
    HASH_FIND(hh, allocs, &addr, sizeof addr, rec);
    struct ipc_export *e = NULL;
    if (rec == NULL || rec->arena != ARENA_DEV) {
        r = CUDA_ERROR_INVALID_VALUE; /* only the base of a device allocation */
    } else {
        HASH_FIND(hh, ipc_exports, &addr, sizeof addr, e);
        if (e == NULL && (e = calloc(1, sizeof *e)) != NULL) {
            e->addr = addr;
            e->serial = next_serial++;
            HASH_ADD(hh, ipc_exports, addr, sizeof e->addr, e);
        }
        if (e == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        struct ipc_handle_data d = {IPC_MAGIC, (uint64_t)getpid(), e->serial, rec->size, rec->dev};
        memset(pHandle, 0, sizeof *pHandle);
        memcpy(pHandle->reserved, &d, sizeof d);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pdptr == NULL || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_handle_data d;
    memcpy(&d, handle.reserved, sizeof d);
    if (d.magic != IPC_MAGIC || d.size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (d.pid == (uint64_t)getpid()) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    struct ipc_open *o, *tmp, *found = NULL;
    HASH_ITER(hh, ipc_opens, o, tmp) {
        if (o->pid == d.pid && o->serial == d.serial) found = o;
    }
    if (found != NULL) {
        found->refs++;
        *pdptr = (CUdeviceptr)found->addr;
    } else if (!arena_ready(ARENA_DEV) || (found = calloc(1, sizeof *found)) == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        uintptr_t addr = pop_free(ARENA_DEV, d.size, FAKE_ALLOC_ALIGN);
        if (addr == 0) addr = bump(ARENA_DEV, d.size, FAKE_ALLOC_ALIGN);
        if (addr == 0) {
            free(found);
            r = CUDA_ERROR_MAP_FAILED;
        } else {
            found->addr = addr;
            found->pid = d.pid;
            found->serial = d.serial;
            found->size = d.size;
            found->dev = d.dev;
            found->refs = 1;
            HASH_ADD(hh, ipc_opens, addr, sizeof found->addr, found);
            /* Another process's memory cannot be shared here: the importer
             * gets fresh pages at the address, so its copies still work. */
            pages_open(ARENA_DEV, addr, d.size);
            *pdptr = (CUdeviceptr)addr;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* The CUDA 4.1 entry point and the CUDA 11 one behave the same here. */
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    COUNT(cuIpcOpenMemHandle);
    return ipc_open(pdptr, handle, Flags);
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags) {
    COUNT(cuIpcOpenMemHandle_v2);
    return ipc_open(pdptr, handle, Flags);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
    COUNT(cuIpcCloseMemHandle);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    uintptr_t addr = (uintptr_t)dptr;
    pthread_mutex_lock(&lock);
    struct ipc_open *o = NULL;
    HASH_FIND(hh, ipc_opens, &addr, sizeof addr, o);
    if (o == NULL) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (--o->refs == 0) {
        HASH_DEL(ipc_opens, o);
        push_free(ARENA_DEV, o->size, o->addr);
        free(o);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* The allocation that holds dptr: a device allocation or an IPC mapping. */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
    COUNT(cuMemGetAddressRange_v2);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    uintptr_t a = (uintptr_t)dptr;
    uintptr_t base = 0;
    size_t size = 0;
    pthread_mutex_lock(&lock);
    struct dev_alloc *rec, *rtmp;
    HASH_ITER(hh, allocs, rec, rtmp) {
        if (a >= rec->addr && a - rec->addr < rec->size) base = rec->addr, size = rec->size;
    }
    struct ipc_open *o, *otmp;
    HASH_ITER(hh, ipc_opens, o, otmp) {
        if (a >= o->addr && a - o->addr < o->size) base = o->addr, size = o->size;
    }
    pthread_mutex_unlock(&lock);
    if (size == 0) return CUDA_ERROR_NOT_FOUND;
    if (pbase != NULL) *pbase = (CUdeviceptr)base;
    if (psize != NULL) *psize = size;
    return CUDA_SUCCESS;
}

/* Shareable handles: a POSIX file descriptor (a memfd here) that names the
 * physical memory of a cuMemCreate handle made with
 * CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR. Importing it, in another process
 * (or this one), gives a new handle with one reference, to be mapped and
 * released like any other; the memory stays the exporter's. */
#define SHARE_MAGIC 0x4c5753484152ULL /* "LWSHAR" */
struct share_data {
    uint64_t magic, pid, id, size;
    int32_t dev;
};

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags) {
    COUNT(cuMemExportToShareableHandle);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (shareableHandle == NULL || flags != 0 ||
        handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct phys *p = NULL;
    HASH_FIND(hh, physs, &handle, sizeof handle, p);
    struct share_data d = {0};
    if (p == NULL || p->refs == 0 || !p->exportable) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        d = (struct share_data){SHARE_MAGIC, p->imported ? p->origin_pid : (uint64_t)getpid(),
                                p->imported ? p->origin_id : p->id, p->size, p->dev};
    }
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS) return r;
    int fd = memfd_create("fake-cuda-shareable", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (pwrite(fd, &d, sizeof d, 0) != (ssize_t)sizeof d) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType) {
    COUNT(cuMemImportFromShareableHandle);
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (handle == NULL || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = (int)(intptr_t)osHandle;
    struct share_data d;
    if (pread(fd, &d, sizeof d, 0) != (ssize_t)sizeof d || d.magic != SHARE_MAGIC || d.size == 0 ||
        d.dev < 0 || d.dev >= FAKE_MAX_DEVICES)
        return CUDA_ERROR_INVALID_VALUE;
    struct phys *p = calloc(1, sizeof *p);
    if (p == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    p->refs = 1;
    p->size = d.size;
    p->dev = d.dev;
    p->imported = true;
    p->exportable = true;
    p->origin_pid = d.pid;
    p->origin_id = d.id;
    pthread_mutex_lock(&lock);
    p->id = next_handle++;
    HASH_ADD(hh, physs, id, sizeof p->id, p);
    *handle = p->id;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ---- pinned host memory: real memory, not counted against the device ---- */

static CUresult host_alloc(void **pp, size_t bytesize) {
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pp == NULL || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    struct host_alloc *rec = calloc(1, sizeof *rec);
    void *mem = NULL;
    if (rec == NULL || posix_memalign(&mem, 4096, bytesize) != 0) {
        free(rec);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    rec->ptr = mem;
    rec->size = bytesize;
    pthread_mutex_lock(&lock);
    HASH_ADD_PTR(host_allocs, ptr, rec);
    pthread_mutex_unlock(&lock);
    *pp = mem;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
    COUNT(cuMemHostAlloc);
    if ((Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                             CU_MEMHOSTALLOC_WRITECOMBINED)) != 0) {
        CUresult r = need_init();
        return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_VALUE;
    }
    return host_alloc(pp, bytesize);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
    COUNT(cuMemAllocHost_v2);
    return host_alloc(pp, bytesize);
}

CUresult cuMemFreeHost(void *p) {
    COUNT(cuMemFreeHost);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    struct host_alloc *rec = NULL;
    HASH_FIND_PTR(host_allocs, &p, rec);
    if (rec != NULL) HASH_DEL(host_allocs, rec);
    pthread_mutex_unlock(&lock);
    if (rec == NULL) return CUDA_ERROR_INVALID_VALUE;
    free(rec->ptr);
    free(rec);
    return CUDA_SUCCESS;
}

/* Page-locks memory the program allocated itself: ranges may not overlap a
 * registered one; unregistering takes the pointer that was registered. */
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags) {
    COUNT(cuMemHostRegister_v2);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (p == NULL || bytesize == 0 || Flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
    struct host_alloc *rec = calloc(1, sizeof *rec), *h, *tmp;
    if (rec == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    rec->ptr = p;
    rec->size = bytesize;
    pthread_mutex_lock(&lock);
    HASH_ITER(hh, host_registered, h, tmp) {
        if ((uintptr_t)h->ptr < (uintptr_t)p + bytesize &&
            (uintptr_t)p < (uintptr_t)h->ptr + h->size)
            r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
    if (r == CUDA_SUCCESS) HASH_ADD_PTR(host_registered, ptr, rec);
    pthread_mutex_unlock(&lock);
    if (r != CUDA_SUCCESS) free(rec);
    return r;
}

CUresult cuMemHostUnregister(void *p) {
    COUNT(cuMemHostUnregister);
    int dev;
    CUresult r = need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&lock);
    struct host_alloc *rec = NULL;
    HASH_FIND_PTR(host_registered, &p, rec);
    if (rec != NULL) HASH_DEL(host_registered, rec);
    pthread_mutex_unlock(&lock);
    if (rec == NULL) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    free(rec);
    return CUDA_SUCCESS;
}

/* ---- private export tables ----
 * The runtime asks for undocumented tables of internal functions and refuses
 * to work (801) without them. The stand-in runtime asks for one table, whose
 * contents never matter. Any other table (NVIDIA's real runtime asks for
 * several, and calls into them) is refused, so that the real runtime fails
 * its start cleanly on this driver, as on a driver too old for it. */

static const void *const export_table[4] = {(const void *)sizeof(export_table), NULL, NULL, NULL};
static const unsigned char stand_in_table_id[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                    0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
    COUNT(cuGetExportTable);
    config();
    if (ppExportTable == NULL || pExportTableId == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (fail_export_table || memcmp(pExportTableId, stand_in_table_id, 16) != 0) {
        *ppExportTable = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *ppExportTable = export_table;
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---- */

#ifndef LW_FAKE_CUDA_NO_PROC_ADDRESS

#ifndef LW_FAKE_CUDA_INTERPOSABLE
/* Hidden aliases: the lookup hands out this library's own functions even when
 * another object (an LD_PRELOAD hook) defines the same names, as the real
 * driver does; taking &cuMemAlloc_v2 would give the interposer's address. */
#define LOCAL(name)                                                                                \
    extern __typeof__(name) local_##name __attribute__((alias(#name), visibility("hidden")));
FAKE_ENTRY_POINTS(LOCAL)
#undef LOCAL
#define IMPL(name) local_##name
#else
/* The interposable variant (build/tests/lib-interposable): default symbol
 * binding, as another vendor's driver or a virtualization layer may have.
 * &cuMemAlloc_v2 goes through the GOT, so under LD_PRELOAD the lookup hands
 * out the preloaded library's function of that name. */
#define IMPL(name) name
#endif

struct proc {
    const char *name; /* base name, as callers ask for it */
    int since;        /* CUDA version that introduced this implementation */
    void *fn;
    void *fn_ptsz; /* per-thread default stream variant, if any */
};

#define P(base, since, impl)                                                                       \
    { #base, since, (void *)IMPL(impl), NULL }
#define P2(base, since, impl)                                                                      \
    { #base, since, (void *)IMPL(impl), (void *)IMPL(impl##_ptsz) }

/* Several rows per name: the newest implementation first. */
static const struct proc procs[] = {
    P(cuGetProcAddress, 12000, cuGetProcAddress_v2),
    P(cuGetProcAddress, 11030, cuGetProcAddress),
    P(cuInit, 2000, cuInit),
    P(cuDriverGetVersion, 2020, cuDriverGetVersion),
    P(cuDeviceGetCount, 2000, cuDeviceGetCount),
    P(cuDeviceGet, 2000, cuDeviceGet),
    P(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    P(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    P(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState),
    P(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    P(cuCtxGetCurrent, 4000, cuCtxGetCurrent),
    P(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2),
    P(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2),
    P(cuCtxGetDevice, 13000, cuCtxGetDevice_v2),
    P(cuCtxGetDevice, 2000, cuCtxGetDevice),
    P(cuCtxSynchronize, 2000, cuCtxSynchronize),
    P(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    P(cuMemGetInfo, 2000, cuMemGetInfo),
    P(cuMemAlloc, 3020, cuMemAlloc_v2),
    P(cuMemAlloc, 2000, cuMemAlloc),
    P(cuMemFree, 3020, cuMemFree_v2),
    P(cuMemFree, 2000, cuMemFree),
    P(cuMemAllocPitch, 3020, cuMemAllocPitch_v2),
    P(cuMemAllocManaged, 6000, cuMemAllocManaged),
    P2(cuMemAllocAsync, 11020, cuMemAllocAsync),
    P2(cuMemFreeAsync, 11020, cuMemFreeAsync),
    P2(cuMemAllocFromPoolAsync, 11020, cuMemAllocFromPoolAsync),
    P(cuMemGetAllocationGranularity, 10020, cuMemGetAllocationGranularity),
    P(cuMemCreate, 10020, cuMemCreate),
    P(cuMemRelease, 10020, cuMemRelease),
    P(cuMemAddressReserve, 10020, cuMemAddressReserve),
    P(cuMemAddressFree, 10020, cuMemAddressFree),
    P(cuMemRetainAllocationHandle, 11000, cuMemRetainAllocationHandle),
    P(cuMemMap, 10020, cuMemMap),
    P(cuMemUnmap, 10020, cuMemUnmap),
    P(cuMemSetAccess, 10020, cuMemSetAccess),
    P(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2),
    P(cuIpcGetMemHandle, 4010, cuIpcGetMemHandle),
    P(cuIpcOpenMemHandle, 11000, cuIpcOpenMemHandle_v2),
    P(cuIpcOpenMemHandle, 4010, cuIpcOpenMemHandle),
    P(cuIpcCloseMemHandle, 4010, cuIpcCloseMemHandle),
    P(cuMemExportToShareableHandle, 10020, cuMemExportToShareableHandle),
    P(cuMemImportFromShareableHandle, 10020, cuMemImportFromShareableHandle),
    P(cuMemHostAlloc, 2020, cuMemHostAlloc),
    P(cuMemAllocHost, 3020, cuMemAllocHost_v2),
    P(cuMemFreeHost, 2000, cuMemFreeHost),
    P(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    P(cuMemHostUnregister, 4000, cuMemHostUnregister),
    P(cuGetExportTable, 3000, cuGetExportTable),
};

#undef P
#undef P2

/* As documented in cuda.h: unknown symbol or a version older than the symbol:
 * CUDA_SUCCESS with *pfn = NULL and the reason in symbolStatus; a version newer
 * than the driver, bad flags or NULL arguments: CUDA_ERROR_INVALID_VALUE.
 * Names are base names; a versioned name ("cuMemAlloc_v2") is not found. */
static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status) {
    if (symbol == NULL || pfn == NULL ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) != 0) {
        if (pfn != NULL) *pfn = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pfn = NULL;
    if (cudaVersion > FAKE_DRIVER_VERSION) return CUDA_ERROR_INVALID_VALUE;
    bool known = false;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0) continue;
        known = true;
        if (cudaVersion < procs[i].since) continue;
        /* Flag 2 picks the _ptsz variant; 0 (the caller's default, resolved by
         * the headers) and 1 give the legacy-stream one. */
        bool ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
        *pfn = ptsz && procs[i].fn_ptsz != NULL ? procs[i].fn_ptsz : procs[i].fn;
        if (status != NULL) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (status != NULL)
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
    COUNT(cuGetProcAddress_v2);
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3 form, without the status argument. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
    COUNT(cuGetProcAddress);
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}

#endif /* LW_FAKE_CUDA_NO_PROC_ADDRESS */

/* ---- test hooks ---- */

unsigned long fake_cuda_calls(const char *versioned_name) {
    if (versioned_name == NULL) return 0;
    if (strcmp(versioned_name, "cuMemGetInfo_v2@allocating") == 0)
        return atomic_load(&meminfo_on_allocating);
    for (int i = 0; i < E_COUNT; i++) {
        if (strcmp(entry_names[i], versioned_name) == 0)
            return atomic_load_explicit(&calls[i], memory_order_relaxed);
    }
    return 0;
}

size_t fake_cuda_used_bytes(int dev) {
    if (dev < 0 || dev >= FAKE_MAX_DEVICES) return 0;
    pthread_mutex_lock(&lock);
    size_t n = used[dev];
    pthread_mutex_unlock(&lock);
    return n;
}

size_t fake_cuda_live_allocations(void) {
    pthread_mutex_lock(&lock);
    size_t n = HASH_COUNT(allocs);
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- the hidden interface used by fake_cuda_clients.c (fake_cuda_internal.h) ---- */

CUresult fake_cuda_need_init(void) {
    return need_init();
}

CUresult fake_cuda_need_ctx(int *dev) {
    return need_ctx(dev);
}

int fake_cuda_device_count(void) {
    config();
    return n_devices;
}

size_t fake_cuda_mem_limit(void) {
    config();
    return mem_limit;
}

CUcontext fake_cuda_primary_ctx(int dev) {
    return (CUcontext)(CTX_BASE + (uintptr_t)dev);
}

bool fake_cuda_ctx_device(CUcontext ctx, int *dev) {
    config();
    return ctx_device(ctx, dev);
}

bool fake_cuda_find_range(uintptr_t a, struct fake_range *out) {
    bool found = false;
    pthread_mutex_lock(&lock);
    struct dev_alloc *rec, *rtmp;
    HASH_ITER(hh, allocs, rec, rtmp) {
        if (!found && a >= rec->addr && a - rec->addr < rec->size) {
            *out = (struct fake_range){rec->addr, rec->size, rec->dev, FAKE_RANGE_DEVICE};
            found = true;
        }
    }
    struct ipc_open *o, *otmp;
    HASH_ITER(hh, ipc_opens, o, otmp) {
        if (!found && a >= o->addr && a - o->addr < o->size) {
            *out = (struct fake_range){o->addr, o->size, o->dev, FAKE_RANGE_DEVICE};
            found = true;
        }
    }
    struct mapping *m, *mtmp;
    HASH_ITER(hh, mappings, m, mtmp) {
        if (!found && a >= m->addr && a - m->addr < m->size) {
            *out = (struct fake_range){m->addr, m->size, m->phys->dev, FAKE_RANGE_MAPPED};
            found = true;
        }
    }
    struct host_alloc *h, *htmp;
    HASH_ITER(hh, host_allocs, h, htmp) {
        if (!found && a >= (uintptr_t)h->ptr && a - (uintptr_t)h->ptr < h->size) {
            *out = (struct fake_range){(uintptr_t)h->ptr, h->size, 0, FAKE_RANGE_HOST};
            found = true;
        }
    }
    HASH_ITER(hh, host_registered, h, htmp) {
        if (!found && a >= (uintptr_t)h->ptr && a - (uintptr_t)h->ptr < h->size) {
            *out = (struct fake_range){(uintptr_t)h->ptr, h->size, 0, FAKE_RANGE_REGISTERED};
            found = true;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

#define INTERNAL_ALIAS(hidden_name, name)                                                          \
    extern __typeof__(name) hidden_name __attribute__((alias(#name), visibility("hidden")));
INTERNAL_ALIAS(fake_cuda_primary_retain, cuDevicePrimaryCtxRetain)
INTERNAL_ALIAS(fake_cuda_primary_release, cuDevicePrimaryCtxRelease_v2)
INTERNAL_ALIAS(fake_cuda_ctx_push, cuCtxPushCurrent_v2)
INTERNAL_ALIAS(fake_cuda_ctx_pop, cuCtxPopCurrent_v2)
INTERNAL_ALIAS(fake_cuda_ctx_get_current, cuCtxGetCurrent)
#undef INTERNAL_ALIAS

/* ---- what PyTorch's driver table needs (c10/cuda/driver_api.cpp) ----
 * PyTorch 2.6 dlsym()s these by name in the loaded libcuda.so.1 and refuses
 * to start without each (torch.cuda._lazy_init). Weak, so that a fuller
 * implementation of the same entry points elsewhere in this library (the
 * driver API for numba and PyCUDA) replaces them at link time. */

#include "fake_device.h"

__attribute__((weak)) CUresult cuGetErrorString(CUresult error, const char **pStr) {
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (error) {
    case CUDA_SUCCESS:
        *pStr = "no error";
        break;
    case CUDA_ERROR_INVALID_VALUE:
        *pStr = "invalid argument";
        break;
    case CUDA_ERROR_OUT_OF_MEMORY:
        *pStr = "out of memory";
        break;
    case CUDA_ERROR_NOT_INITIALIZED:
        *pStr = "initialization error";
        break;
    case CUDA_ERROR_NO_DEVICE:
        *pStr = "no CUDA-capable device is detected";
        break;
    case CUDA_ERROR_INVALID_DEVICE:
        *pStr = "invalid device ordinal";
        break;
    case CUDA_ERROR_INVALID_CONTEXT:
        *pStr = "invalid device context";
        break;
    case CUDA_ERROR_NOT_FOUND:
        *pStr = "named symbol not found";
        break;
    case CUDA_ERROR_NOT_SUPPORTED:
        *pStr = "operation not supported";
        break;
    default:
        *pStr = NULL;
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

__attribute__((weak)) CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev) {
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    return fake_device_attribute(attrib, dev, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Kernels and stream operations do nothing on the stand-in, but a memset is
 * a copy the host can do: device memory is host memory. */
__attribute__((weak)) CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                                CUstream hStream) {
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    unsigned int *p = (unsigned int *)(uintptr_t)dstDevice;
    for (size_t i = 0; i < N; i++)
        p[i] = ui;
    return CUDA_SUCCESS;
}

__attribute__((weak)) CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr,
                                                    unsigned int value, unsigned int flags) {
    CUresult r = need_init();
    if (r != CUDA_SUCCESS) return r;
    if (addr == 0) return CUDA_ERROR_INVALID_VALUE;
    *(volatile unsigned int *)(uintptr_t)addr = value;
    return CUDA_SUCCESS;
}
