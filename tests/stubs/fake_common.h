/* SPDX-License-Identifier: Apache-2.0 */
/* Declarations shared by the CPU stand-ins for libcuda.so.1 / libcudart and by
 * the programs that test them.
 *
 * The prototypes below mirror cuda.h / cuda_runtime_api.h (CUDA 13) with the
 * types of leakwatch/cuda_api.h. fake_cuda.c and fake_cudart.c include this
 * header so that every definition is checked against its prototype, and test
 * programs include it because they must not include the toolkit's headers. */
#ifndef LW_FAKE_COMMON_H
#define LW_FAKE_COMMON_H

#include <dlfcn.h>
#include <stddef.h>

#include "../../src/base/arch.h" /* LW_ARCH_GLIBC_BASE */
#include "leakwatch/cuda_api.h"

/* What cuDriverGetVersion / cudaRuntimeGetVersion report. The driver's
 * version is a build option: build/tests/lib-cuda12 is a CUDA 12.8 driver. */
#ifndef FAKE_DRIVER_VERSION
#define FAKE_DRIVER_VERSION 13000
#endif
#define FAKE_RUNTIME_VERSION 13000

/* Defaults of the stand-in driver's knobs (environment variables):
 *   FAKE_CUDA_DEVICES            number of devices (default 2, 0 = cuInit fails with 100)
 *   FAKE_CUDA_MEM_BYTES          memory per device, bytes, optional K/M/G/T suffix
 *   FAKE_CUDA_FAIL_EXPORT_TABLE  1 = cuGetExportTable fails (the runtime then answers 801)
 *   FAKE_CUDA_NO_RESERVE         1 = hand out device addresses without reserving their
 *                                range first (make check-aarch64: qemu-user keeps state
 *                                per guest page, and the 8 TiB reservation takes it a
 *                                minute per process) */
#define FAKE_DEFAULT_DEVICES 2
#define FAKE_DEFAULT_MEM_BYTES (80ULL << 30)
#define FAKE_MAX_DEVICES 64
/* cuMemGetAllocationGranularity's answer; cuMemCreate/cuMemMap sizes must be multiples. */
#define FAKE_VMM_GRANULARITY ((size_t)2 << 20)
/* Device allocations are rounded up to (and aligned on) this many bytes. */
#define FAKE_ALLOC_ALIGN ((size_t)512)

/* ---- driver entry points exported by libcuda.so.1 (names as in the real library) ---- */
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuMemGetInfo(unsigned int *free, unsigned int *total);
CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree(CUdeviceptr_v1 dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void *p);
#ifndef CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#endif
#ifndef cudaErrorHostMemoryAlreadyRegistered
#define cudaErrorHostMemoryAlreadyRegistered 712
#define cudaErrorHostMemoryNotRegistered 713
#endif
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr);
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);
CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType handleType,
                                      unsigned long long flags);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType shHandleType);
#ifndef CUDA_ERROR_MAP_FAILED
#define CUDA_ERROR_MAP_FAILED 205
#endif
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemFreeHost(void *p);
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);
/* Absent from the legacy variant (build/tests/lib-legacy, -DLW_FAKE_CUDA_NO_PROC_ADDRESS). */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);

/* ---- test hooks exported by the stand-in driver (not part of CUDA) ---- */
/* How many times the entry point with this exported (versioned) name was
 * called; "cuMemGetInfo_v2@allocating": calls of it on threads that had
 * allocated device memory before. */
unsigned long fake_cuda_calls(const char *versioned_name);
/* Bytes of device memory in use on dev: device, managed, async and cuMemCreate memory. */
size_t fake_cuda_used_bytes(int dev);
/* Live device allocations (cuMemAlloc*, managed, async), all devices. */
size_t fake_cuda_live_allocations(void);
typedef unsigned long (*fake_cuda_calls_fn)(const char *versioned_name);
typedef size_t (*fake_cuda_used_bytes_fn)(int dev);
typedef size_t (*fake_cuda_live_allocations_fn)(void);

/* Finds a symbol of the stand-in driver from a test program. RTLD_DEFAULT
 * only sees libcuda.so.1 when the program links it (drv_*): the runtime
 * dlopen()s it RTLD_LOCAL, as the real one does, so for rt_* and static_*
 * programs it must be looked up through the already-loaded library. */
static inline void *fake_cuda_sym(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p == NULL) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h != NULL) {
            p = dlsym(h, name);
            dlclose(h); /* drops only the reference RTLD_NOLOAD took */
        }
    }
    return p;
}

/* ---- runtime entry points exported by libcudart.so (hidden in libcudart_static.a) ---- */
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                    cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                         cudaStream_t stream);
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr);
cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags);
cudaError_t cudaIpcCloseMemHandle(void *devPtr);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
cudaError_t cudaDriverGetVersion(int *driverVersion);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                             unsigned int cudaVersion, unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t
cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                      unsigned long long flags,
                                      enum cudaDriverEntryPointQueryResult *driverStatus);

/* ---- test hooks exported by the stand-in runtimes (not part of CUDA) ---- */
/* "libcudart.so.13" or "libcudart.so.12": which stand-in runtime answered. */
const char *fake_cudart_name(void);
/* Calls of this runtime's cudaMalloc. */
unsigned long fake_cudart_mallocs(void);

/* ======================================================================
 * Runtime self-check, shared by tests/programs/rt_stubcheck.c (runtime linked
 * dynamically) and static_stubcheck.c (libcudart_static.a). Compiled only
 * where FAKE_RUNTIME_SELFCHECK is defined.
 *
 * The program defines dlsym(), as an LD_PRELOAD hook would, and checks the
 * runtime's path to the driver from the outside: one dlsym of
 * "cuGetProcAddress_v2", two calls of it for "cuGetProcAddress" (11030 and
 * 12000), every other lookup through the 12000 pointer, and driver calls
 * through the pointers those lookups returned. With the legacy driver it
 * checks the dlsym-by-versioned-name fallback instead.
 * Because the program defines dlsym, it cannot run under a sanitizer runtime
 * (those resolve their interceptors with dlsym before any code of ours can run).
 * ====================================================================== */
#ifdef FAKE_RUNTIME_SELFCHECK

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sc_failures;

#define SC_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            sc_failures++;                                                                         \
        }                                                                                          \
    } while (0)

#define SC_EQ(a, b)                                                                                \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, a_, b_);                                                               \
            sc_failures++;                                                                         \
        }                                                                                          \
    } while (0)

/* ---- the dlsym probe ---- */

typedef void *(*sc_dlsym_fn)(void *, const char *);
static sc_dlsym_fn sc_real_dlsym;

__attribute__((constructor)) static void sc_find_real_dlsym(void) {
    sc_real_dlsym = (sc_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (sc_real_dlsym == NULL)
        sc_real_dlsym = (sc_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", LW_ARCH_GLIBC_BASE);
}

struct sc_lookup {
    char name[64];
    int version;
    unsigned long long flags;
    bool status_null;
};

static pthread_mutex_t sc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sc_lookup sc_lookups[512]; /* through the 12000 pointer */
static int sc_n_lookups;
static char sc_dlsyms[64][64]; /* dlsym'd cu* names other than cuGetProcAddress_v2 */
static int sc_n_dlsyms;
static atomic_int sc_dlsym_gpa;   /* dlsym(..., "cuGetProcAddress_v2") */
static atomic_int sc_first_calls; /* calls of the function dlsym returned */
static atomic_int sc_first_bad;   /* ... asking for something else than cuGetProcAddress */
static atomic_int sc_11030_calls; /* calls of the 11030 pointer (should be none) */
static lw_pfn_cuGetProcAddress_v12000 sc_real_first, sc_real_12000;
static lw_pfn_cuGetProcAddress_v11030 sc_real_11030;

/* Counting wrappers put between the runtime and the driver. */
static lw_pfn_cuMemAlloc_v3020 sc_real_alloc;
static lw_pfn_cuMemAllocAsync_v11020 sc_real_async[2];
static atomic_int sc_n_alloc, sc_n_async[2];

static CUresult sc_alloc(CUdeviceptr *d, size_t n) {
    atomic_fetch_add(&sc_n_alloc, 1);
    return sc_real_alloc(d, n);
}
static CUresult sc_async0(CUdeviceptr *d, size_t n, CUstream s) {
    atomic_fetch_add(&sc_n_async[0], 1);
    return sc_real_async[0](d, n, s);
}
static CUresult sc_async1(CUdeviceptr *d, size_t n, CUstream s) {
    atomic_fetch_add(&sc_n_async[1], 1);
    return sc_real_async[1](d, n, s);
}

/* Swaps a driver function the runtime obtained for a wrapper, by versioned name. */
static void *sc_substitute(const char *versioned, void *fn) {
    if (fn == NULL) return NULL;
    if (strcmp(versioned, "cuMemAlloc_v2") == 0) {
        sc_real_alloc = (lw_pfn_cuMemAlloc_v3020)fn;
        return (void *)sc_alloc;
    }
    if (strcmp(versioned, "cuMemAllocAsync") == 0) {
        sc_real_async[0] = (lw_pfn_cuMemAllocAsync_v11020)fn;
        return (void *)sc_async0;
    }
    if (strcmp(versioned, "cuMemAllocAsync_ptsz") == 0) {
        sc_real_async[1] = (lw_pfn_cuMemAllocAsync_v11020)fn;
        return (void *)sc_async1;
    }
    return fn;
}

static CUresult sc_gpa_12000(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    pthread_mutex_lock(&sc_lock);
    if (sc_n_lookups < (int)(sizeof sc_lookups / sizeof sc_lookups[0])) {
        struct sc_lookup *l = &sc_lookups[sc_n_lookups++];
        snprintf(l->name, sizeof l->name, "%s", symbol ? symbol : "(null)");
        l->version = version;
        l->flags = flags;
        l->status_null = status == NULL;
    }
    pthread_mutex_unlock(&sc_lock);
    CUresult r = sc_real_12000(symbol, pfn, version, flags, status);
    if (r == CUDA_SUCCESS && pfn != NULL && symbol != NULL) {
        if (strcmp(symbol, "cuMemAlloc") == 0 && version >= 3020)
            *pfn = sc_substitute("cuMemAlloc_v2", *pfn);
        else if (strcmp(symbol, "cuMemAllocAsync") == 0)
            *pfn = sc_substitute((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
                                     ? "cuMemAllocAsync_ptsz"
                                     : "cuMemAllocAsync",
                                 *pfn);
    }
    return r;
}

static CUresult sc_gpa_11030(const char *symbol, void **pfn, int version, cuuint64_t flags) {
    atomic_fetch_add(&sc_11030_calls, 1);
    return sc_real_11030(symbol, pfn, version, flags);
}

static CUresult sc_gpa_first(const char *symbol, void **pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    atomic_fetch_add(&sc_first_calls, 1);
    CUresult r = sc_real_first(symbol, pfn, version, flags, status);
    if (symbol == NULL || strcmp(symbol, "cuGetProcAddress") != 0 || flags != 0) {
        atomic_fetch_add(&sc_first_bad, 1);
        return r;
    }
    if (r != CUDA_SUCCESS || pfn == NULL || *pfn == NULL) return r;
    if (version >= 12000) {
        sc_real_12000 = (lw_pfn_cuGetProcAddress_v12000)*pfn;
        *pfn = (void *)sc_gpa_12000;
    } else {
        sc_real_11030 = (lw_pfn_cuGetProcAddress_v11030)*pfn;
        *pfn = (void *)sc_gpa_11030;
    }
    return r;
}

/* RTLD_NEXT is relative to the caller, which a forwarded call would change
 * (a sanitizer's runtime resolving its interceptors would get itself back):
 * search the objects loaded after the caller's, in load order. */
static void *sc_next_dlsym(const void *caller, const char *name) {
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL) return NULL;
    for (lm = lm->l_next; lm != NULL; lm = lm->l_next) {
        void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
        if (h == NULL) continue;
        void *p = sc_real_dlsym(h, name);
        dlclose(h);
        /* A handle also searches the object's dependencies: keep only a
         * definition in the object itself, as RTLD_NEXT would find it. */
        struct link_map *owner = NULL;
        if (p != NULL && dladdr1(p, &info, (void **)&owner, RTLD_DL_LINKMAP) != 0 && owner == lm)
            return p;
    }
    return NULL;
}

/* Interposes the runtime's dlsym calls (a definition in the program wins over
 * libc's, for libcudart.so as for the static runtime linked in). */
void *dlsym(void *restrict handle, const char *restrict name) {
    if (sc_real_dlsym == NULL)
        sc_find_real_dlsym(); /* called before our constructor: from a preloaded library's */
    if (handle == RTLD_NEXT) return sc_next_dlsym(__builtin_return_address(0), name);
    void *p = sc_real_dlsym(handle, name);
    if (strncmp(name, "cu", 2) != 0 || strncmp(name, "cuda", 4) == 0) return p;
    if (strcmp(name, "cuGetProcAddress_v2") == 0) {
        atomic_fetch_add(&sc_dlsym_gpa, 1);
        if (p == NULL) return NULL;
        sc_real_first = (lw_pfn_cuGetProcAddress_v12000)p;
        return (void *)sc_gpa_first;
    }
    pthread_mutex_lock(&sc_lock);
    if (sc_n_dlsyms < (int)(sizeof sc_dlsyms / sizeof sc_dlsyms[0]))
        snprintf(sc_dlsyms[sc_n_dlsyms++], sizeof sc_dlsyms[0], "%s", name);
    pthread_mutex_unlock(&sc_lock);
    return sc_substitute(name, p);
}

/* A symbol of the stand-in driver, bypassing the probe. */
static void *sc_driver_sym(const char *name) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) return NULL;
    void *p = sc_real_dlsym(h, name);
    dlclose(h);
    return p;
}

static bool sc_looked_up(const char *name, int version, unsigned long long flags) {
    bool found = false;
    pthread_mutex_lock(&sc_lock);
    for (int i = 0; i < sc_n_lookups && !found; i++)
        found = strcmp(sc_lookups[i].name, name) == 0 && sc_lookups[i].version == version &&
                sc_lookups[i].flags == flags;
    pthread_mutex_unlock(&sc_lock);
    return found;
}

static bool sc_dlsymed(const char *name) {
    bool found = false;
    pthread_mutex_lock(&sc_lock);
    for (int i = 0; i < sc_n_dlsyms && !found; i++)
        found = strcmp(sc_dlsyms[i], name) == 0;
    pthread_mutex_unlock(&sc_lock);
    return found;
}

/* ---- test hooks of the stand-in driver ---- */

static unsigned long sc_calls(const char *name) {
    fake_cuda_calls_fn f = (fake_cuda_calls_fn)fake_cuda_sym("fake_cuda_calls");
    return f ? f(name) : (unsigned long)-1;
}

static size_t sc_used(int dev) {
    fake_cuda_used_bytes_fn f = (fake_cuda_used_bytes_fn)fake_cuda_sym("fake_cuda_used_bytes");
    return f ? f(dev) : (size_t)-1;
}

/* ---- checks ---- */

static void sc_check_loading(bool legacy) {
    SC_EQ(atomic_load(&sc_dlsym_gpa), 1);
    SC_EQ(atomic_load(&sc_11030_calls), 0);
    SC_EQ(sc_calls("cuGetExportTable"), 1);
    SC_EQ(sc_calls("cuInit"), 1);
    if (legacy) {
        /* No cuGetProcAddress_v2: every function by its versioned name. */
        SC_EQ(atomic_load(&sc_first_calls), 0);
        SC_EQ(sc_n_lookups, 0);
        const char *names[] = {"cuInit",
                               "cuMemAlloc_v2",
                               "cuMemFree_v2",
                               "cuMemGetInfo_v2",
                               "cuMemAllocHost_v2",
                               "cuMemAllocPitch_v2",
                               "cuMemAllocAsync",
                               "cuMemAllocAsync_ptsz",
                               "cuMemFreeAsync",
                               "cuMemFreeAsync_ptsz",
                               "cuMemAllocFromPoolAsync",
                               "cuMemAllocFromPoolAsync_ptsz",
                               "cuGetExportTable"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (!sc_dlsymed(names[i])) {
                fprintf(stderr, "legacy driver: runtime did not dlsym %s\n", names[i]);
                sc_failures++;
            }
        }
        SC_CHECK(!sc_dlsymed("cuGetProcAddress"));
        return;
    }
    /* Exactly one dlsym, then only the pointer cuGetProcAddress(12000) returned. */
    SC_EQ(sc_n_dlsyms, 0);
    SC_EQ(atomic_load(&sc_first_calls), 2);
    SC_EQ(atomic_load(&sc_first_bad), 0);
    SC_CHECK(sc_real_12000 != NULL && sc_real_11030 != NULL);
    SC_CHECK(sc_real_12000 == (lw_pfn_cuGetProcAddress_v12000)sc_driver_sym("cuGetProcAddress_v2"));
    SC_CHECK(sc_real_11030 == (lw_pfn_cuGetProcAddress_v11030)sc_driver_sym("cuGetProcAddress"));
    SC_CHECK(sc_n_lookups >= 20);
    SC_CHECK(sc_looked_up("cuMemAlloc", 3020, 0));
    SC_CHECK(sc_looked_up("cuMemFree", 3020, 0));
    SC_CHECK(sc_looked_up("cuMemAllocPitch", 3020, 0));
    SC_CHECK(sc_looked_up("cuMemAllocManaged", 6000, 0));
    SC_CHECK(sc_looked_up("cuMemHostAlloc", 2020, 0));
    SC_CHECK(sc_looked_up("cuMemFreeHost", 2000, 0));
    SC_CHECK(sc_looked_up("cuGetExportTable", 3000, 0));
    const char *async[] = {"cuMemAllocAsync", "cuMemFreeAsync", "cuMemAllocFromPoolAsync"};
    for (int i = 0; i < 3; i++) {
        SC_CHECK(sc_looked_up(async[i], 11020, 0));
        SC_CHECK(sc_looked_up(async[i], 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    }
    pthread_mutex_lock(&sc_lock);
    for (int i = 0; i < sc_n_lookups; i++)
        SC_CHECK(sc_lookups[i].status_null); /* eager lookups pass no status */
    pthread_mutex_unlock(&sc_lock);
}

static void sc_check_device_memory(void) {
    size_t base0 = sc_used(0);
    void *p = NULL, *q = NULL;
    SC_EQ(cudaMalloc(&p, 1000), cudaSuccess);
    SC_CHECK(p != NULL && (uintptr_t)p % 512 == 0);
    SC_EQ(sc_used(0), base0 + 1024);
    SC_EQ(sc_calls("cuMemAlloc_v2"), 1);
    SC_EQ(atomic_load(&sc_n_alloc), 1); /* through the pointer the lookup returned */
    SC_EQ(cudaFree(p), cudaSuccess);
    SC_EQ(sc_used(0), base0);
    SC_EQ(cudaMalloc(&q, 1000), cudaSuccess);
    SC_CHECK(q == p); /* the freed address is handed out again */
    SC_EQ(cudaFree(q), cudaSuccess);

    /* Unknown and double frees reach the driver and fail there. */
    unsigned long frees = sc_calls("cuMemFree_v2");
    SC_EQ(cudaFree(q), cudaErrorInvalidValue);
    SC_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    SC_EQ(cudaGetLastError(), cudaSuccess);
    SC_EQ(cudaFree((void *)(uintptr_t)0x1234), cudaErrorInvalidValue);
    SC_EQ(sc_calls("cuMemFree_v2"), frees + 2);
    (void)cudaGetLastError();

    unsigned long allocs = sc_calls("cuMemAlloc_v2");
    p = (void *)1;
    SC_EQ(cudaMalloc(&p, 0), cudaSuccess);
    SC_CHECK(p == NULL);
    SC_EQ(sc_calls("cuMemAlloc_v2"), allocs);

    size_t free_b = 0, total = 0;
    SC_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
    SC_EQ(free_b, total - sc_used(0));
    SC_EQ(cudaMalloc(&p, free_b + 1), cudaErrorMemoryAllocation);
    SC_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    SC_EQ(cudaMalloc(&p, total / 2), cudaSuccess);
    SC_EQ(cudaMalloc(&q, total / 2 + 512), cudaErrorMemoryAllocation);
    SC_EQ(cudaFree(p), cudaSuccess);
    (void)cudaGetLastError();

    /* Stream-ordered: plain entry points reach the plain driver functions,
     * _ptsz ones the _ptsz functions. */
    SC_EQ(cudaMallocAsync(&p, 4096, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemAllocAsync"), 1);
    SC_EQ(sc_calls("cuMemAllocAsync_ptsz"), 0);
    SC_EQ(atomic_load(&sc_n_async[0]), 1);
    SC_EQ(cudaFreeAsync(p, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemFreeAsync"), 1);
    SC_EQ(cudaMallocAsync_ptsz(&p, 4096, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemAllocAsync_ptsz"), 1);
    SC_EQ(atomic_load(&sc_n_async[1]), 1);
    SC_EQ(cudaFreeAsync_ptsz(p, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemFreeAsync_ptsz"), 1);
    SC_EQ(sc_calls("cuMemFreeAsync"), 1);
    cudaMemPool_t pool = (cudaMemPool_t)(uintptr_t)0x10;
    SC_EQ(cudaMallocFromPoolAsync(&p, 4096, pool, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemAllocFromPoolAsync"), 1);
    SC_EQ(cudaFreeAsync(p, NULL), cudaSuccess);
    SC_EQ(cudaMallocFromPoolAsync_ptsz(&p, 4096, pool, NULL), cudaSuccess);
    SC_EQ(sc_calls("cuMemAllocFromPoolAsync_ptsz"), 1);
    SC_EQ(cudaFree(p), cudaSuccess); /* cudaFree takes stream-ordered memory too */
    SC_EQ(cudaMallocFromPoolAsync(&p, 4096, NULL, NULL), cudaErrorInvalidValue);
    (void)cudaGetLastError();

    SC_EQ(cudaMallocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), cudaSuccess);
    SC_EQ(sc_used(0), base0 + 4096);
    SC_EQ(cudaFree(p), cudaSuccess);
    SC_EQ(cudaMallocManaged(&p, 4096, 0), cudaErrorInvalidValue);
    SC_EQ(cudaMallocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), cudaErrorInvalidValue);

    size_t pitch = 0;
    SC_EQ(cudaMallocPitch(&p, &pitch, 1000, 10), cudaSuccess);
    SC_EQ(pitch, 1024);
    SC_EQ(sc_used(0), base0 + 10240);
    SC_EQ(cudaFree(p), cudaSuccess);
    SC_EQ(sc_used(0), base0);
    (void)cudaGetLastError();
}

static void sc_check_host_memory(void) {
    size_t base0 = sc_used(0);
    void *h = NULL;
    SC_EQ(cudaMallocHost(&h, 100), cudaSuccess);
    SC_CHECK(h != NULL);
    if (h != NULL) memset(h, 0xab, 100); /* real memory */
    SC_EQ(sc_used(0), base0);
    SC_EQ(sc_calls("cuMemAllocHost_v2"), 1);
    SC_EQ(cudaFreeHost(h), cudaSuccess);
    SC_EQ(cudaFreeHost(h), cudaErrorInvalidValue);
    SC_EQ(cudaHostAlloc(&h, 100, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
          cudaSuccess);
    SC_EQ(sc_calls("cuMemHostAlloc"), 1);
    SC_EQ(cudaFreeHost(h), cudaSuccess);
    SC_EQ(cudaHostAlloc(&h, 100, 8), cudaErrorInvalidValue);
    static char registered[8192];
    SC_EQ(cudaHostRegister(registered, sizeof registered, 0), cudaSuccess);
    SC_EQ(cudaHostRegister(registered, 4096, 0), cudaErrorHostMemoryAlreadyRegistered);
    SC_EQ(sc_calls("cuMemHostRegister_v2"), 2);
    SC_EQ(cudaHostUnregister(registered), cudaSuccess);
    SC_EQ(cudaHostUnregister(registered), cudaErrorHostMemoryNotRegistered);
    int on_stack = 0;
    SC_EQ(cudaFreeHost(&on_stack), cudaErrorInvalidValue);
    SC_EQ(sc_calls("cuMemFreeHost"), 4);
    (void)cudaGetLastError();
}

struct sc_thread_arg {
    int device;
    size_t used_delta;
};

static void *sc_new_thread(void *arg) {
    struct sc_thread_arg *a = arg;
    size_t before = sc_used(0);
    void *p = NULL;
    if (cudaGetDevice(&a->device) != cudaSuccess) a->device = -1;
    if (cudaMalloc(&p, 512) == cudaSuccess) {
        a->used_delta = sc_used(0) - before;
        cudaFree(p);
    }
    return NULL;
}

static void sc_check_devices(int expected_devices) {
    int n = -1, d = -1;
    SC_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    SC_EQ(n, expected_devices);
    SC_EQ(cudaGetDevice(&d), cudaSuccess);
    SC_EQ(d, 0);
    if (n < 2) return;
    SC_EQ(cudaSetDevice(1), cudaSuccess);
    SC_EQ(cudaGetDevice(&d), cudaSuccess);
    SC_EQ(d, 1);
    size_t base1 = sc_used(1);
    void *p = NULL;
    SC_EQ(cudaMalloc(&p, 512), cudaSuccess);
    SC_EQ(sc_used(1), base1 + 512);
    SC_EQ(cudaFree(p), cudaSuccess);
    SC_EQ(cudaSetDevice(n), cudaErrorInvalidDevice);
    SC_EQ(cudaGetLastError(), cudaErrorInvalidDevice);

    /* The current device is per thread: a new thread starts on device 0. */
    struct sc_thread_arg a = {-2, 0};
    pthread_t t;
    SC_EQ(pthread_create(&t, NULL, sc_new_thread, &a), 0);
    pthread_join(t, NULL);
    SC_EQ(a.device, 0);
    SC_EQ(a.used_delta, 512);
    SC_EQ(cudaGetDevice(&d), cudaSuccess);
    SC_EQ(d, 1);
    SC_EQ(cudaSetDevice(0), cudaSuccess);
}

static void sc_check_entry_points(bool legacy) {
    void *fp = (void *)1;
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    if (legacy) {
        SC_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &fp, 0, &st), cudaErrorNotSupported);
        SC_CHECK(fp == NULL);
        (void)cudaGetLastError();
        return;
    }
    int before = sc_n_lookups;
    SC_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &fp, 0, &st), cudaSuccess);
    SC_EQ(st, cudaDriverEntryPointSuccess);
    SC_CHECK(fp == (void *)sc_alloc); /* the driver's answer, through the runtime's pointer */
    SC_EQ(sc_n_lookups, before + 1);
    SC_CHECK(sc_looked_up("cuMemAlloc", FAKE_RUNTIME_VERSION, 0));
    pthread_mutex_lock(&sc_lock);
    SC_CHECK(!sc_lookups[before].status_null);
    pthread_mutex_unlock(&sc_lock);

    SC_EQ(cudaGetDriverEntryPoint_ptsz("cuMemAllocAsync", &fp, 0, &st), cudaSuccess);
    SC_CHECK(fp == (void *)sc_async1);
    SC_EQ(cudaGetDriverEntryPoint("cuMemAllocAsync", &fp, 0, &st), cudaSuccess);
    SC_CHECK(fp == (void *)sc_async0);
    SC_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fp, 2000, 0, &st), cudaSuccess);
    SC_CHECK(fp == sc_driver_sym("cuMemAlloc")); /* v1 for a CUDA 2.0 caller */
    SC_EQ(cudaGetDriverEntryPointByVersion("cuMemCreate", &fp, 12000, 0, &st), cudaSuccess);
    SC_CHECK(fp != NULL && fp == sc_driver_sym("cuMemCreate"));
    SC_EQ(cudaGetDriverEntryPointByVersion("cuCtxGetDevice", &fp, 13000, 0, &st), cudaSuccess);
    SC_CHECK(fp == sc_driver_sym("cuCtxGetDevice_v2"));
    SC_EQ(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", &fp, 11010, 0, &st), cudaSuccess);
    SC_CHECK(fp == NULL);
    SC_EQ(st, cudaDriverEntryPointVersionNotSufficent);
    SC_EQ(cudaGetDriverEntryPoint("cuNoSuchFunction", &fp, 0, &st), cudaSuccess);
    SC_CHECK(fp == NULL);
    SC_EQ(st, cudaDriverEntryPointSymbolNotFound);
    SC_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fp, FAKE_DRIVER_VERSION + 10, 0, &st),
          cudaErrorInvalidValue);
    SC_CHECK(fp == NULL);
    SC_EQ(cudaGetDriverEntryPoint("cuMemAlloc", NULL, 0, &st), cudaErrorInvalidValue);
    (void)cudaGetLastError();
}

#define SC_THREADS 16
#define SC_LIVE 8

static pthread_barrier_t sc_barrier;
static void *sc_live[SC_THREADS][SC_LIVE];
static atomic_int sc_thread_errors;

static void *sc_worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seed = 12345u + (unsigned)id;
    void **live = sc_live[id];
    for (int i = 0; i < SC_LIVE; i++) {
        if (cudaMalloc(&live[i], 1 + rand_r(&seed) % (1 << 20)) != cudaSuccess)
            atomic_fetch_add(&sc_thread_errors, 1);
    }
    pthread_barrier_wait(&sc_barrier); /* all live at once: addresses must differ */
    pthread_barrier_wait(&sc_barrier);
    for (int iter = 0; iter < 400; iter++) {
        int k = rand_r(&seed) % SC_LIVE;
        if (cudaFree(live[k]) != cudaSuccess ||
            cudaMalloc(&live[k], 1 + rand_r(&seed) % 4096) != cudaSuccess)
            atomic_fetch_add(&sc_thread_errors, 1);
    }
    for (int i = 0; i < SC_LIVE; i++) {
        if (cudaFree(live[i]) != cudaSuccess) atomic_fetch_add(&sc_thread_errors, 1);
    }
    return NULL;
}

static int sc_cmp_ptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void sc_check_threads(void) {
    size_t base0 = sc_used(0);
    pthread_t t[SC_THREADS];
    pthread_barrier_init(&sc_barrier, NULL, SC_THREADS + 1);
    for (int i = 0; i < SC_THREADS; i++)
        pthread_create(&t[i], NULL, sc_worker, (void *)(intptr_t)i);
    pthread_barrier_wait(&sc_barrier);
    uintptr_t all[SC_THREADS * SC_LIVE];
    memcpy(all, sc_live, sizeof all);
    qsort(all, SC_THREADS * SC_LIVE, sizeof all[0], sc_cmp_ptr);
    for (int i = 1; i < SC_THREADS * SC_LIVE; i++)
        SC_CHECK(all[i] != all[i - 1]);
    pthread_barrier_wait(&sc_barrier);
    for (int i = 0; i < SC_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&sc_barrier);
    SC_EQ(atomic_load(&sc_thread_errors), 0);
    SC_EQ(sc_used(0), base0);
}

/* mode: NULL (normal), "legacy" (driver without cuGetProcAddress),
 * "export-fail" (FAKE_CUDA_FAIL_EXPORT_TABLE=1), "no-device" (FAKE_CUDA_DEVICES=0),
 * "no-driver" (no libcuda.so.1 to be found). */
static int fake_runtime_selfcheck(const char *mode, bool static_runtime) {
    bool legacy = mode != NULL && strcmp(mode, "legacy") == 0;
    int version = 0;
    SC_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
    SC_EQ(version, FAKE_RUNTIME_VERSION);
    SC_EQ(atomic_load(&sc_dlsym_gpa), 0); /* nothing loaded before it is needed */

    /* The static runtime is not in the dynamic symbol table: nothing can
     * interpose cudaMalloc there, only the driver path is visible. */
    void *exported = sc_real_dlsym(RTLD_DEFAULT, "cudaMalloc");
    SC_CHECK(static_runtime ? exported == NULL : exported != NULL);

    if (mode != NULL && strcmp(mode, "export-fail") == 0) {
        void *p = NULL;
        int n = -1;
        SC_EQ(cudaFree(NULL), cudaErrorNotSupported);
        SC_EQ(cudaMalloc(&p, 16), cudaErrorNotSupported);
        SC_EQ(cudaGetDeviceCount(&n), cudaErrorNotSupported);
        SC_EQ(cudaGetLastError(), cudaErrorNotSupported);
        /* The failed start unloaded the driver, as the real runtime does. */
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        SC_CHECK(h == NULL);
        if (h != NULL) dlclose(h);
        return sc_failures;
    }
    if (mode != NULL && strcmp(mode, "no-driver") == 0) {
        void *p = NULL;
        int n = -1, dv = -1;
        cudaError_t e = cudaGetDeviceCount(&n);
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (h != NULL) {
            dlclose(h);
            fprintf(stderr, "no-driver: skipped, a libcuda.so.1 was found\n");
            return 0;
        }
        SC_EQ(e, cudaErrorInsufficientDriver);
        SC_EQ(n, 0);
        SC_EQ(cudaMalloc(&p, 16), cudaErrorInsufficientDriver);
        SC_EQ(cudaGetLastError(), cudaErrorInsufficientDriver);
        SC_EQ(cudaDriverGetVersion(&dv), cudaSuccess);
        SC_EQ(dv, 0);
        SC_EQ(atomic_load(&sc_dlsym_gpa), 0);
        return sc_failures;
    }
    if (mode != NULL && strcmp(mode, "no-device") == 0) {
        void *p = NULL;
        int n = -1;
        SC_EQ(cudaGetDeviceCount(&n), cudaErrorNoDevice);
        SC_EQ(n, 0);
        SC_EQ(cudaMalloc(&p, 16), cudaErrorNoDevice);
        SC_EQ(cudaGetLastError(), cudaErrorNoDevice);
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        SC_CHECK(h == NULL); /* unloaded after the failed start */
        if (h != NULL) dlclose(h);
        return sc_failures;
    }

    SC_EQ(cudaFree(NULL), cudaSuccess);
    sc_check_loading(legacy);
    int dv = 0;
    SC_EQ(cudaDriverGetVersion(&dv), cudaSuccess);
    SC_EQ(dv, FAKE_DRIVER_VERSION);
    SC_EQ(cudaDeviceSynchronize(), cudaSuccess);
    SC_CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);

    const char *nd = getenv("FAKE_CUDA_DEVICES");
    sc_check_device_memory();
    sc_check_host_memory();
    sc_check_devices(nd != NULL && *nd != '\0' ? atoi(nd) : FAKE_DEFAULT_DEVICES);
    sc_check_entry_points(legacy);
    sc_check_threads();

    /* Still one dlsym and two first-pointer calls after all of that. */
    SC_EQ(atomic_load(&sc_dlsym_gpa), 1);
    SC_EQ(atomic_load(&sc_first_calls), legacy ? 0 : 2);
    SC_EQ(atomic_load(&sc_11030_calls), 0);
    return sc_failures;
}

#endif /* FAKE_RUNTIME_SELFCHECK */

#endif
