/* SPDX-License-Identifier: Apache-2.0 */
/* CPU stand-in for the CUDA runtime (tests only): libcudart.so, and with
 * -DLW_FAKE_CUDART_STATIC -fvisibility=hidden libcudart_static.a.
 *
 * It reaches the driver exactly as real cudart 12/13 does, because that path
 * is what leakwatch hooks:
 *   - it never links libcuda; at the first API call it dlopen()s libcuda.so.1
 *     and calls dlsym() once, for "cuGetProcAddress_v2";
 *   - it asks that function for "cuGetProcAddress" (versions 11030 and 12000)
 *     and makes every later lookup through the 12000 pointer it gets back;
 *   - it looks up every driver function it uses eagerly, by base name and
 *     version, the stream-ordered ones twice (flags 0 and per-thread);
 *   - without cuGetProcAddress_v2 in the driver it falls back to dlsym() by
 *     versioned name;
 *   - cuGetExportTable must succeed, or every call fails with 801;
 *   - when its start fails (no driver functions, export tables missing, cuInit
 *     failing), it forgets every driver pointer and dlcloses libcuda.so.1,
 *     as the real runtime does.
 * Built as libcudart.so (symbols versioned libcudart.so.13, like the real
 * library's cudaMalloc@@libcudart.so.13), as a second runtime libcudart.so.12
 * (-DFAKE_CUDART_VERSION=12080 -DFAKE_CUDART_NAME=...: two runtimes in one
 * process), and as libcudart_static.a.
 * dlopen/dlsym are called through the PLT, so an LD_PRELOAD hook of dlsym sees
 * them, also in the static variant (linked into the program). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <uthash.h>

#include "fake_common.h"

#ifdef LW_FAKE_CUDART_STATIC
/* Hidden (-fvisibility=hidden): like cudart_static, the program calls these
 * directly and nothing outside it can interpose them. */
#define RT_API
#else
#define RT_API __attribute__((visibility("default")))
#endif

#ifndef FAKE_CUDART_VERSION
#define FAKE_CUDART_VERSION FAKE_RUNTIME_VERSION
#endif
#ifndef FAKE_CUDART_NAME
#define FAKE_CUDART_NAME "libcudart.so.13"
#endif

/* ---- the driver functions this runtime uses ---- */

enum drv_fn {
    F_cuInit,
    F_cuDriverGetVersion,
    F_cuDeviceGetCount,
    F_cuDevicePrimaryCtxRetain,
    F_cuCtxSetCurrent,
    F_cuCtxGetCurrent,
    F_cuCtxGetDevice,
    F_cuCtxSynchronize,
    F_cuMemGetInfo,
    F_cuMemAlloc,
    F_cuMemFree,
    F_cuMemAllocPitch,
    F_cuMemAllocManaged,
    F_cuMemAllocHost,
    F_cuMemHostAlloc,
    F_cuMemFreeHost,
    F_cuMemHostRegister,
    F_cuMemHostUnregister,
    F_cuMemAllocAsync,
    F_cuMemAllocAsync_ptsz,
    F_cuMemFreeAsync,
    F_cuMemFreeAsync_ptsz,
    F_cuMemAllocFromPoolAsync,
    F_cuMemAllocFromPoolAsync_ptsz,
    F_cuIpcGetMemHandle,
    F_cuIpcOpenMemHandle,
    F_cuIpcCloseMemHandle,
    F_cuMemGetAddressRange,
    F_cuGetExportTable,
    F_COUNT
};

struct drv_lookup {
    const char *base;      /* name given to cuGetProcAddress */
    int version;           /* ABI version this runtime was written against */
    cuuint64_t flags;      /* CU_GET_PROC_ADDRESS_* */
    const char *versioned; /* exported name, for the dlsym fallback */
    bool required;         /* the runtime cannot start without it */
};

#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static const struct drv_lookup lookups[F_COUNT] = {
    [F_cuInit] = {"cuInit", 2000, 0, "cuInit", true},
    [F_cuDriverGetVersion] = {"cuDriverGetVersion", 2020, 0, "cuDriverGetVersion", true},
    [F_cuDeviceGetCount] = {"cuDeviceGetCount", 2000, 0, "cuDeviceGetCount", true},
    [F_cuDevicePrimaryCtxRetain] = {"cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain",
                                    true},
    [F_cuCtxSetCurrent] = {"cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent", true},
    [F_cuCtxGetCurrent] = {"cuCtxGetCurrent", 4000, 0, "cuCtxGetCurrent", true},
    [F_cuCtxGetDevice] = {"cuCtxGetDevice", 2000, 0, "cuCtxGetDevice", true},
    [F_cuCtxSynchronize] = {"cuCtxSynchronize", 2000, 0, "cuCtxSynchronize", false},
    [F_cuMemGetInfo] = {"cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2", false},
    [F_cuMemAlloc] = {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2", false},
    [F_cuMemFree] = {"cuMemFree", 3020, 0, "cuMemFree_v2", false},
    [F_cuMemAllocPitch] = {"cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2", false},
    [F_cuMemAllocManaged] = {"cuMemAllocManaged", 6000, 0, "cuMemAllocManaged", false},
    [F_cuMemAllocHost] = {"cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2", false},
    [F_cuMemHostAlloc] = {"cuMemHostAlloc", 2020, 0, "cuMemHostAlloc", false},
    [F_cuMemFreeHost] = {"cuMemFreeHost", 2000, 0, "cuMemFreeHost", false},
    [F_cuMemHostRegister] = {"cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2", false},
    [F_cuMemHostUnregister] = {"cuMemHostUnregister", 4000, 0, "cuMemHostUnregister", false},
    [F_cuMemAllocAsync] = {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync", false},
    [F_cuMemAllocAsync_ptsz] = {"cuMemAllocAsync", 11020, PTDS, "cuMemAllocAsync_ptsz", false},
    [F_cuMemFreeAsync] = {"cuMemFreeAsync", 11020, 0, "cuMemFreeAsync", false},
    [F_cuMemFreeAsync_ptsz] = {"cuMemFreeAsync", 11020, PTDS, "cuMemFreeAsync_ptsz", false},
    [F_cuMemAllocFromPoolAsync] = {"cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync",
                                   false},
    [F_cuMemAllocFromPoolAsync_ptsz] = {"cuMemAllocFromPoolAsync", 11020, PTDS,
                                        "cuMemAllocFromPoolAsync_ptsz", false},
    [F_cuIpcGetMemHandle] = {"cuIpcGetMemHandle", 4010, 0, "cuIpcGetMemHandle", false},
    [F_cuIpcOpenMemHandle] = {"cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2", false},
    [F_cuIpcCloseMemHandle] = {"cuIpcCloseMemHandle", 4010, 0, "cuIpcCloseMemHandle", false},
    [F_cuMemGetAddressRange] = {"cuMemGetAddressRange", 3020, 0, "cuMemGetAddressRange_v2", false},
    [F_cuGetExportTable] = {"cuGetExportTable", 3000, 0, "cuGetExportTable", true},
};

typedef CUresult (*pfn_cuInit)(unsigned int);
typedef CUresult (*pfn_cuDriverGetVersion)(int *);
typedef CUresult (*pfn_cuDeviceGetCount)(int *);
typedef CUresult (*pfn_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*pfn_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*pfn_cuCtxGetCurrent)(CUcontext *);
typedef CUresult (*pfn_cuCtxSynchronize)(void);

static void *drv[F_COUNT];
#define DRV(name, type) ((type)drv[F_##name])

/* The 12000 pointer the driver gave for "cuGetProcAddress": every lookup
 * after the first two goes through it. NULL in the dlsym fallback. */
static lw_pfn_cuGetProcAddress_v12000 get_proc;
/* The 11030 (4-argument) one: asked for, as the real runtime does, not used. */
static lw_pfn_cuGetProcAddress_v11030 get_proc_11030;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_error; /* sticky: every call fails with it */

/* ---- errors ---- */

static cudaError_t from_driver(CUresult r) {
    switch (r) {
    case CUDA_SUCCESS:
        return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE:
        return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED:
        return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED:
        return cudaErrorCudartUnloading;
    case CUDA_ERROR_NO_DEVICE:
        return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE:
        return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT:
        return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE:
        return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND:
        return cudaErrorSymbolNotFound;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
        return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
        return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_NOT_PERMITTED:
        return cudaErrorNotPermitted;
    case CUDA_ERROR_NOT_SUPPORTED:
        return cudaErrorNotSupported;
    default:
        return cudaErrorUnknown;
    }
}

static __thread cudaError_t last_error;

/* Every API call returns through here, so cudaGetLastError sees failures. */
static cudaError_t ret(cudaError_t e) {
    if (e != cudaSuccess) last_error = e;
    return e;
}

/* ---- loading the driver ---- */

static void start_driver(void *lib);

/* A failed start leaves nothing pointing into the driver, and unloads it. */
static void load_driver(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == NULL) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    start_driver(lib);
    if (load_error != cudaSuccess) {
        memset(drv, 0, sizeof drv);
        get_proc = NULL;
        get_proc_11030 = NULL;
        dlclose(lib);
    }
}

static void start_driver(void *lib) {
    void *first = dlsym(lib, "cuGetProcAddress_v2");
    if (first != NULL) {
        lw_pfn_cuGetProcAddress_v12000 gpa = (lw_pfn_cuGetProcAddress_v12000)first;
        void *p = NULL;
        if (gpa("cuGetProcAddress", &p, 11030, 0, NULL) == CUDA_SUCCESS)
            get_proc_11030 = (lw_pfn_cuGetProcAddress_v11030)p;
        p = NULL;
        if (gpa("cuGetProcAddress", &p, 12000, 0, NULL) != CUDA_SUCCESS || p == NULL) {
            load_error = cudaErrorInsufficientDriver;
            return;
        }
        get_proc = (lw_pfn_cuGetProcAddress_v12000)p;
        for (int i = 0; i < F_COUNT; i++) {
            void *fn = NULL;
            if (get_proc(lookups[i].base, &fn, lookups[i].version, lookups[i].flags, NULL) !=
                CUDA_SUCCESS)
                fn = NULL;
            drv[i] = fn;
        }
    } else {
        /* A driver older than CUDA 11.3 has no cuGetProcAddress: by name. */
        for (int i = 0; i < F_COUNT; i++)
            drv[i] = dlsym(lib, lookups[i].versioned);
    }
    for (int i = 0; i < F_COUNT; i++) {
        if (lookups[i].required && drv[i] == NULL) {
            load_error = cudaErrorInsufficientDriver;
            return;
        }
    }
    static const CUuuid table_id = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87,
                                     0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}};
    const void *table = NULL;
    CUresult r = DRV(cuGetExportTable, lw_pfn_cuGetExportTable_v3000)(&table, &table_id);
    if (r != CUDA_SUCCESS || table == NULL) {
        load_error = cudaErrorNotSupported;
        return;
    }
    r = DRV(cuInit, pfn_cuInit)(0);
    if (r != CUDA_SUCCESS) load_error = from_driver(r);
}

static atomic_ulong mallocs;

static cudaError_t load(void) {
    pthread_once(&load_once, load_driver);
    return load_error;
}

/* Like the real runtime, a thread's first call that needs a device makes the
 * primary context of device 0 current, unless the thread already has a
 * context (made current through the driver, or by cudaSetDevice). */
static __thread bool thread_ready;

static cudaError_t ready(void) {
    cudaError_t e = load();
    if (e != cudaSuccess || thread_ready) return e;
    CUcontext ctx = NULL;
    CUresult r = DRV(cuCtxGetCurrent, pfn_cuCtxGetCurrent)(&ctx);
    if (r == CUDA_SUCCESS && ctx == NULL) {
        r = DRV(cuDevicePrimaryCtxRetain, pfn_cuDevicePrimaryCtxRetain)(&ctx, 0);
        if (r == CUDA_SUCCESS) r = DRV(cuCtxSetCurrent, pfn_cuCtxSetCurrent)(ctx);
    }
    if (r != CUDA_SUCCESS) return from_driver(r);
    thread_ready = true;
    return cudaSuccess;
}

/* A function the driver did not provide (older driver). */
#define NEED(name)                                                                                 \
    do {                                                                                           \
        if (drv[F_##name] == NULL) return ret(cudaErrorCallRequiresNewerDriver);                   \
    } while (0)

#define READY()                                                                                    \
    do {                                                                                           \
        cudaError_t e_ = ready();                                                                  \
        if (e_ != cudaSuccess) return ret(e_);                                                     \
    } while (0)

static void *to_ptr(CUdeviceptr d) {
    return (void *)(uintptr_t)d;
}
static CUdeviceptr to_dptr(const void *p) {
    return (CUdeviceptr)(uintptr_t)p;
}

/* ---- device memory ---- */

RT_API cudaError_t cudaMalloc(void **devPtr, size_t size) {
    atomic_fetch_add(&mallocs, 1);
    READY();
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    if (size == 0) {
        *devPtr = NULL; /* the real runtime: success, NULL, no driver call */
        return cudaSuccess;
    }
    NEED(cuMemAlloc);
    CUdeviceptr d = 0;
    CUresult r = DRV(cuMemAlloc, lw_pfn_cuMemAlloc_v3020)(&d, size);
    if (r == CUDA_SUCCESS) *devPtr = to_ptr(d);
    return ret(from_driver(r));
}

RT_API cudaError_t cudaFree(void *devPtr) {
    READY(); /* cudaFree(NULL) is the idiom to initialise the runtime */
    if (devPtr == NULL) return cudaSuccess;
    NEED(cuMemFree);
    return ret(from_driver(DRV(cuMemFree, lw_pfn_cuMemFree_v3020)(to_dptr(devPtr))));
}

/* Stream-ordered memory is counted in its device's default pool (the pool
 * attributes UsedMemCurrent/High, ReservedMemCurrent/High; below). */
static void pool_count_alloc(void *p, size_t size);
static void pool_count_free(void *p);

/* The stream is passed on as given: the stand-in driver accepts any. */
static cudaError_t malloc_async_stream(enum drv_fn fn, void **devPtr, size_t size,
                                       cudaStream_t stream) {
    READY();
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    if (drv[fn] == NULL) return ret(cudaErrorCallRequiresNewerDriver);
    CUdeviceptr d = 0;
    CUresult r = ((lw_pfn_cuMemAllocAsync_v11020)drv[fn])(&d, size, (CUstream)stream);
    if (r == CUDA_SUCCESS) {
        *devPtr = to_ptr(d);
        pool_count_alloc(*devPtr, size);
    }
    return ret(from_driver(r));
}

RT_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream) {
    return malloc_async_stream(F_cuMemAllocAsync, devPtr, size, hStream);
}

RT_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream) {
    return malloc_async_stream(F_cuMemAllocAsync_ptsz, devPtr, size, hStream);
}

static cudaError_t free_async(enum drv_fn fn, void *devPtr, cudaStream_t stream) {
    READY();
    if (drv[fn] == NULL) return ret(cudaErrorCallRequiresNewerDriver);
    cudaError_t e = ret(
        from_driver(((lw_pfn_cuMemFreeAsync_v11020)drv[fn])(to_dptr(devPtr), (CUstream)stream)));
    if (e == cudaSuccess) pool_count_free(devPtr);
    return e;
}

RT_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) {
    return free_async(F_cuMemFreeAsync, devPtr, hStream);
}

RT_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) {
    return free_async(F_cuMemFreeAsync_ptsz, devPtr, hStream);
}

static cudaError_t malloc_from_pool(enum drv_fn fn, void **ptr, size_t size, cudaMemPool_t pool,
                                    cudaStream_t stream) {
    READY();
    if (ptr == NULL) return ret(cudaErrorInvalidValue);
    if (drv[fn] == NULL) return ret(cudaErrorCallRequiresNewerDriver);
    CUdeviceptr d = 0;
    CUresult r = ((lw_pfn_cuMemAllocFromPoolAsync_v11020)drv[fn])(&d, size, (CUmemoryPool)pool,
                                                                  (CUstream)stream);
    if (r == CUDA_SUCCESS) {
        *ptr = to_ptr(d);
        pool_count_alloc(*ptr, size);
    }
    return ret(from_driver(r));
}

RT_API cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                           cudaStream_t stream) {
    return malloc_from_pool(F_cuMemAllocFromPoolAsync, ptr, size, memPool, stream);
}

RT_API cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                cudaStream_t stream) {
    return malloc_from_pool(F_cuMemAllocFromPoolAsync_ptsz, ptr, size, memPool, stream);
}

RT_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags) {
    READY();
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    NEED(cuMemAllocManaged);
    CUdeviceptr d = 0;
    CUresult r = DRV(cuMemAllocManaged, lw_pfn_cuMemAllocManaged_v6000)(&d, size, flags);
    if (r == CUDA_SUCCESS) *devPtr = to_ptr(d);
    return ret(from_driver(r));
}

RT_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height) {
    READY();
    if (devPtr == NULL || pitch == NULL) return ret(cudaErrorInvalidValue);
    NEED(cuMemAllocPitch);
    CUdeviceptr d = 0;
    /* Element size 4: the driver only uses it to pick the pitch alignment. */
    CUresult r = DRV(cuMemAllocPitch, lw_pfn_cuMemAllocPitch_v3020)(&d, pitch, width, height, 4);
    if (r == CUDA_SUCCESS) *devPtr = to_ptr(d);
    return ret(from_driver(r));
}

RT_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
    READY();
    NEED(cuMemGetInfo);
    return ret(from_driver(DRV(cuMemGetInfo, lw_pfn_cuMemGetInfo_v3020)(free_bytes, total)));
}

/* ---- pinned host memory ---- */

/* Pinned and registered ranges, for cudaPointerGetAttributes (below). */
static void host_add(void *p, size_t size);
static void host_remove(void *p);

static cudaError_t host_added(cudaError_t e, void *p, size_t size) {
    if (e == cudaSuccess && p != NULL) host_add(p, size);
    return e;
}

RT_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
    READY();
    NEED(cuMemAllocHost);
    cudaError_t e = ret(from_driver(DRV(cuMemAllocHost, lw_pfn_cuMemAllocHost_v3020)(ptr, size)));
    return host_added(e, ptr != NULL ? *ptr : NULL, size);
}

RT_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    READY();
    NEED(cuMemHostAlloc);
    /* cudaHostAlloc* flags have the values of CU_MEMHOSTALLOC_*. */
    cudaError_t e =
        ret(from_driver(DRV(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020)(pHost, size, flags)));
    return host_added(e, pHost != NULL ? *pHost : NULL, size);
}

RT_API cudaError_t cudaFreeHost(void *ptr) {
    READY();
    if (ptr == NULL) return cudaSuccess;
    NEED(cuMemFreeHost);
    cudaError_t e = ret(from_driver(DRV(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000)(ptr)));
    if (e == cudaSuccess) host_remove(ptr);
    return e;
}

RT_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    READY();
    NEED(cuMemHostRegister);
    cudaError_t e =
        ret(from_driver(DRV(cuMemHostRegister, lw_pfn_cuMemHostRegister_v6050)(ptr, size, flags)));
    return host_added(e, ptr, size);
}

RT_API cudaError_t cudaHostUnregister(void *ptr) {
    READY();
    NEED(cuMemHostUnregister);
    cudaError_t e =
        ret(from_driver(DRV(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000)(ptr)));
    if (e == cudaSuccess) host_remove(ptr);
    return e;
}

/* ---- interprocess memory ---- */

typedef CUresult (*pfn_cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);

/* cudaIpcMemHandle_t and CUipcMemHandle are the same 64 bytes. */
RT_API cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr) {
    READY();
    NEED(cuIpcGetMemHandle);
    if (handle == NULL) return ret(cudaErrorInvalidValue);
    CUipcMemHandle h;
    CUresult r = DRV(cuIpcGetMemHandle, pfn_cuIpcGetMemHandle)(&h, to_dptr(devPtr));
    if (r == CUDA_SUCCESS) memcpy(handle->reserved, h.reserved, sizeof h.reserved);
    return ret(from_driver(r));
}

RT_API cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
                                        unsigned int flags) {
    READY();
    NEED(cuIpcOpenMemHandle);
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    CUipcMemHandle h;
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CUdeviceptr d = 0;
    CUresult r = DRV(cuIpcOpenMemHandle, lw_pfn_cuIpcOpenMemHandle_v11000)(&d, h, flags);
    if (r == CUDA_SUCCESS) *devPtr = to_ptr(d);
    return ret(from_driver(r));
}

RT_API cudaError_t cudaIpcCloseMemHandle(void *devPtr) {
    READY();
    NEED(cuIpcCloseMemHandle);
    return ret(
        from_driver(DRV(cuIpcCloseMemHandle, lw_pfn_cuIpcCloseMemHandle_v4010)(to_dptr(devPtr))));
}

/* ---- devices ---- */

RT_API cudaError_t cudaGetDeviceCount(int *count) {
    if (count == NULL) return ret(cudaErrorInvalidValue);
    *count = 0;
    cudaError_t e = load();
    if (e != cudaSuccess) return ret(e);
    return ret(from_driver(DRV(cuDeviceGetCount, pfn_cuDeviceGetCount)(count)));
}

RT_API cudaError_t cudaSetDevice(int device) {
    cudaError_t e = load();
    if (e != cudaSuccess) return ret(e);
    int n = 0;
    CUresult r = DRV(cuDeviceGetCount, pfn_cuDeviceGetCount)(&n);
    if (r != CUDA_SUCCESS) return ret(from_driver(r));
    if (device < 0 || device >= n) return ret(cudaErrorInvalidDevice);
    CUcontext ctx = NULL;
    r = DRV(cuDevicePrimaryCtxRetain, pfn_cuDevicePrimaryCtxRetain)(&ctx, device);
    if (r == CUDA_SUCCESS) r = DRV(cuCtxSetCurrent, pfn_cuCtxSetCurrent)(ctx);
    if (r != CUDA_SUCCESS) return ret(from_driver(r));
    thread_ready = true;
    return cudaSuccess;
}

RT_API cudaError_t cudaGetDevice(int *device) {
    READY();
    if (device == NULL) return ret(cudaErrorInvalidValue);
    CUdevice d = 0;
    CUresult r = DRV(cuCtxGetDevice, lw_pfn_cuCtxGetDevice_v2000)(&d);
    if (r == CUDA_SUCCESS) *device = d;
    return ret(from_driver(r));
}

RT_API cudaError_t cudaDeviceSynchronize(void) {
    READY();
    NEED(cuCtxSynchronize);
    return ret(from_driver(DRV(cuCtxSynchronize, pfn_cuCtxSynchronize)()));
}

/* ---- versions and errors ---- */

RT_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion) {
    if (runtimeVersion == NULL) return ret(cudaErrorInvalidValue);
    *runtimeVersion = FAKE_CUDART_VERSION; /* needs no driver */
    return cudaSuccess;
}

RT_API cudaError_t cudaDriverGetVersion(int *driverVersion) {
    if (driverVersion == NULL) return ret(cudaErrorInvalidValue);
    *driverVersion = 0; /* no driver: 0, with success, as documented */
    (void)load();       /* a runtime that failed to start can still tell */
    if (drv[F_cuDriverGetVersion] == NULL) return cudaSuccess;
    return ret(from_driver(DRV(cuDriverGetVersion, pfn_cuDriverGetVersion)(driverVersion)));
}

RT_API cudaError_t cudaGetLastError(void) {
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

RT_API const char *cudaGetErrorString(cudaError_t error) {
    switch (error) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInitializationError:
        return "initialization error";
    case cudaErrorCudartUnloading:
        return "driver shutting down";
    case cudaErrorInsufficientDriver:
        return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorCallRequiresNewerDriver:
        return "API call is not supported in the installed CUDA driver";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorDeviceUninitialized:
        return "invalid device context";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorSymbolNotFound:
        return "named symbol not found";
    case cudaErrorNotPermitted:
        return "operation not permitted";
    case cudaErrorNotSupported:
        return "operation not supported";
    case cudaErrorUnknown:
        return "unknown error";
    default:
        return "unrecognized error code";
    }
}

/* ---- driver entry points, through the driver's cuGetProcAddress ---- */

static cudaError_t entry_point(const char *symbol, void **funcPtr, int version,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *driverStatus) {
    if (funcPtr == NULL || symbol == NULL) return ret(cudaErrorInvalidValue);
    *funcPtr = NULL;
    cudaError_t e = load();
    if (e != cudaSuccess) return ret(e);
    if (get_proc == NULL)
        return ret(cudaErrorNotSupported); /* the driver has no cuGetProcAddress */
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(symbol, funcPtr, version, flags, &status);
    if (r == CUDA_SUCCESS && driverStatus != NULL)
        *driverStatus = (enum cudaDriverEntryPointQueryResult)status;
    return ret(from_driver(r));
}

/* cudaEnableDefault (0) means per-thread for code built with per-thread
 * default streams, which is what the _ptsz entry points are for. */
static unsigned long long ptsz_flags(unsigned long long flags) {
    return flags == 0 ? (unsigned long long)PTDS : flags;
}

RT_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                           unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult *driverStatus) {
    return entry_point(symbol, funcPtr, FAKE_CUDART_VERSION, flags, driverStatus);
}

RT_API cudaError_t
cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *driverStatus) {
    return entry_point(symbol, funcPtr, FAKE_CUDART_VERSION, ptsz_flags(flags), driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus) {
    return entry_point(symbol, funcPtr, (int)cudaVersion, flags, driverStatus);
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus) {
    return entry_point(symbol, funcPtr, (int)cudaVersion, ptsz_flags(flags), driverStatus);
}

/* ---- test hooks (not part of CUDA) ---- */

RT_API const char *fake_cudart_name(void) {
    return FAKE_CUDART_NAME;
}

RT_API unsigned long fake_cudart_mallocs(void) {
    return atomic_load(&mallocs);
}

/* ======================================================================
 * The rest of the CUDA 12 runtime API that real clients call (every runtime
 * function Debian's PyTorch 2.6 libraries reference: tests/stubs/cuda12/
 * libcudart.so.12.syms). On this stand-in kernels do nothing (launches and
 * fat-binary registration succeed), device memory is host memory (the
 * driver's allocation), so copies and memsets really copy and set, and
 * streams, events, graphs and pools answer as on one idle device where
 * every operation has completed.
 * ====================================================================== */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fake_device.h"

#define cudaErrorInvalidConfiguration 9
#define cudaErrorInvalidDevicePointer 17
#define cudaErrorInvalidMemcpyDirection 21
#define cudaErrorMissingConfiguration 52
#define cudaErrorNotReady 600
#define cudaErrorPeerAccessAlreadyEnabled 704
#define cudaErrorPeerAccessNotEnabled 705
#define cudaErrorIllegalState 401
#define cudaErrorOperatingSystem 304
#define cudaErrorStreamCaptureUnsupported 900
#define cudaErrorStreamCaptureUnmatched 903

typedef struct fake_rt_event *cudaEvent_t;
typedef struct fake_rt_graph *cudaGraph_t;
struct fake_rt_graph {
    unsigned magic;
    size_t nodes; /* operations captured */
};
typedef struct fake_rt_graph_exec *cudaGraphExec_t;
typedef struct fake_rt_graph_node *cudaGraphNode_t;
typedef void (*cudaHostFn_t)(void *userData);

struct dim3 {
    unsigned int x, y, z;
};
typedef struct dim3 dim3;

/* Work issued to a stream that is being captured is recorded in the graph
 * (counted: the graph's nodes), not run (defined with the streams below). */
static bool captured(cudaStream_t stream);

/* CUDA 12.x's cudaDeviceProp (driver_types.h); CUDA 13 removed fields after
 * maxGridSize, so its header gives other offsets. */
struct cudaDeviceProp {
    char name[256];
    CUuuid uuid;
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int deviceOverlap;
    int multiProcessorCount;
    int kernelExecTimeoutEnabled;
    int integrated;
    int canMapHostMemory;
    int computeMode;
    int maxTexture1D;
    int maxTexture1DMipmap;
    int maxTexture1DLinear;
    int maxTexture2D[2];
    int maxTexture2DMipmap[2];
    int maxTexture2DLinear[3];
    int maxTexture2DGather[2];
    int maxTexture3D[3];
    int maxTexture3DAlt[3];
    int maxTextureCubemap;
    int maxTexture1DLayered[2];
    int maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2];
    int maxSurface1D;
    int maxSurface2D[2];
    int maxSurface3D[3];
    int maxSurface1DLayered[2];
    int maxSurface2DLayered[3];
    int maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int singleToDoublePrecisionPerfRatio;
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    int cooperativeMultiDeviceLaunch;
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported;
    int sparseCudaArraySupported;
    int hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported;
    int memoryPoolsSupported;
    int gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingCudaArraySupported;
    int ipcEventSupported;
    int clusterLaunch;
    int unifiedFunctionPointers;
    int reserved2[2];
    int reserved1[1];
    int reserved[60];
};
_Static_assert(sizeof(struct cudaDeviceProp) == 1032, "CUDA 12's cudaDeviceProp is 1032 bytes");

struct cudaFuncAttributes {
    size_t sharedSizeBytes;
    size_t constSizeBytes;
    size_t localSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
    int ptxVersion;
    int binaryVersion;
    int cacheModeCA;
    int maxDynamicSharedSizeBytes;
    int preferredShmemCarveout;
    int clusterDimMustBeSet;
    int requiredClusterWidth;
    int requiredClusterHeight;
    int requiredClusterDepth;
    int clusterSchedulingPolicyPreference;
    int nonPortableClusterSizeAllowed;
    int reserved[16];
};

enum { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2 };
struct cudaPointerAttributes {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
};

typedef struct cudaIpcEventHandle_st {
    char reserved[64];
} cudaIpcEventHandle_t;

/* The current device of the calling thread (0 when it has none yet). */
static int current_device(void) {
    CUdevice d = 0;
    if (drv[F_cuCtxGetDevice] == NULL ||
        DRV(cuCtxGetDevice, lw_pfn_cuCtxGetDevice_v2000)(&d) != CUDA_SUCCESS)
        return 0;
    return d;
}

static bool valid_device_rt(int device) {
    int n = 0;
    return DRV(cuDeviceGetCount, pfn_cuDeviceGetCount)(&n) == CUDA_SUCCESS && device >= 0 &&
           device < n;
}

/* ---- devices ---- */

RT_API cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device) {
    READY();
    if (value == NULL) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(device)) return ret(cudaErrorInvalidDevice);
    if (attr == 50 /* PciDomainId */) {
        *value = 0;
        return cudaSuccess;
    }
    return fake_device_attribute(attr, device, value) ? cudaSuccess : ret(cudaErrorInvalidValue);
}

static int attr_of(int attr, int device) {
    int v = 0;
    (void)fake_device_attribute(attr, device, &v);
    return v;
}

RT_API cudaError_t cudaGetDeviceProperties_v2(struct cudaDeviceProp *prop, int device) {
    READY();
    if (prop == NULL) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(device)) return ret(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s", FAKE_DEV_NAME);
    for (int i = 0; i < 16; i++)
        prop->uuid.bytes[i] = (char)(0xa0 + i + device);
    size_t free_b = 0, total = 0;
    if (drv[F_cuMemGetInfo] != NULL)
        (void)DRV(cuMemGetInfo, lw_pfn_cuMemGetInfo_v3020)(&free_b, &total);
    prop->totalGlobalMem = total;
    prop->sharedMemPerBlock = (size_t)attr_of(8, device);
    prop->regsPerBlock = attr_of(12, device);
    prop->warpSize = attr_of(10, device);
    prop->memPitch = (size_t)attr_of(11, device);
    prop->maxThreadsPerBlock = attr_of(1, device);
    for (int i = 0; i < 3; i++) {
        prop->maxThreadsDim[i] = attr_of(2 + i, device);
        prop->maxGridSize[i] = attr_of(5 + i, device);
    }
    prop->clockRate = attr_of(13, device);
    prop->totalConstMem = (size_t)attr_of(9, device);
    prop->major = attr_of(75, device);
    prop->minor = attr_of(76, device);
    prop->textureAlignment = (size_t)attr_of(14, device);
    prop->texturePitchAlignment = 32;
    prop->deviceOverlap = 1;
    prop->multiProcessorCount = attr_of(16, device);
    prop->canMapHostMemory = 1;
    prop->surfaceAlignment = (size_t)attr_of(30, device);
    prop->concurrentKernels = 1;
    prop->ECCEnabled = 1;
    prop->pciBusID = attr_of(33, device);
    prop->asyncEngineCount = attr_of(40, device);
    prop->unifiedAddressing = 1;
    prop->memoryClockRate = attr_of(36, device);
    prop->memoryBusWidth = attr_of(37, device);
    prop->l2CacheSize = attr_of(38, device);
    prop->persistingL2CacheMaxSize = attr_of(107, device);
    prop->maxThreadsPerMultiProcessor = attr_of(39, device);
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = (size_t)attr_of(81, device);
    prop->regsPerMultiprocessor = attr_of(82, device);
    prop->managedMemory = 1;
    prop->singleToDoublePrecisionPerfRatio = attr_of(87, device);
    prop->concurrentManagedAccess = 1;
    prop->computePreemptionSupported = 1;
    prop->canUseHostPointerForRegisteredMem = 1;
    prop->cooperativeLaunch = 1;
    prop->sharedMemPerBlockOptin = (size_t)attr_of(97, device);
    prop->maxBlocksPerMultiProcessor = attr_of(106, device);
    prop->accessPolicyMaxWindowSize = attr_of(108, device);
    prop->reservedSharedMemPerBlock = (size_t)attr_of(111, device);
    prop->hostRegisterSupported = 1;
    prop->sparseCudaArraySupported = 1;
    prop->hostRegisterReadOnlySupported = 1;
    prop->timelineSemaphoreInteropSupported = 1;
    prop->memoryPoolsSupported = 1;
    prop->memoryPoolSupportedHandleTypes = (unsigned)attr_of(119, device);
    prop->deferredMappingCudaArraySupported = 1;
    prop->ipcEventSupported = 1;
    prop->clusterLaunch = 1;
    return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device) {
    READY();
    if (pciBusId == NULL || len <= 0) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(device)) return ret(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", attr_of(33, device));
    return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
    READY();
    if (leastPriority != NULL) *leastPriority = 0;
    if (greatestPriority != NULL) *greatestPriority = -5;
    return cudaSuccess;
}

/* Peer access: every pair of distinct devices can, once per direction. */
static atomic_ullong peer_enabled[FAKE_MAX_DEVICES];

RT_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice) {
    READY();
    if (canAccessPeer == NULL) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(device) || !valid_device_rt(peerDevice))
        return ret(cudaErrorInvalidDevice);
    *canAccessPeer = device != peerDevice;
    return cudaSuccess;
}

RT_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
    READY();
    int self = current_device();
    if (flags != 0) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(peerDevice) || peerDevice == self || peerDevice >= 64 || self >= 64)
        return ret(cudaErrorInvalidDevice);
    unsigned long long bit = 1ULL << peerDevice;
    if (atomic_fetch_or(&peer_enabled[self], bit) & bit)
        return ret(cudaErrorPeerAccessAlreadyEnabled);
    return cudaSuccess;
}

/* ---- errors ---- */

RT_API cudaError_t cudaPeekAtLastError(void) {
    return last_error;
}

RT_API const char *cudaGetErrorName(cudaError_t error) {
    switch (error) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
        return "cudaErrorInitializationError";
    case cudaErrorCudartUnloading:
        return "cudaErrorCudartUnloading";
    case cudaErrorInsufficientDriver:
        return "cudaErrorInsufficientDriver";
    case cudaErrorCallRequiresNewerDriver:
        return "cudaErrorCallRequiresNewerDriver";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorDeviceUninitialized:
        return "cudaErrorDeviceUninitialized";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorSymbolNotFound:
        return "cudaErrorSymbolNotFound";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    case cudaErrorPeerAccessAlreadyEnabled:
        return "cudaErrorPeerAccessAlreadyEnabled";
    case cudaErrorPeerAccessNotEnabled:
        return "cudaErrorPeerAccessNotEnabled";
    case cudaErrorHostMemoryAlreadyRegistered:
        return "cudaErrorHostMemoryAlreadyRegistered";
    case cudaErrorHostMemoryNotRegistered:
        return "cudaErrorHostMemoryNotRegistered";
    case cudaErrorNotPermitted:
        return "cudaErrorNotPermitted";
    case cudaErrorNotSupported:
        return "cudaErrorNotSupported";
    case cudaErrorUnknown:
        return "cudaErrorUnknown";
    default:
        return "cudaErrorUnknown";
    }
}

RT_API cudaError_t cudaProfilerStart(void) {
    return cudaSuccess;
}

RT_API cudaError_t cudaProfilerStop(void) {
    return cudaSuccess;
}

/* ---- copies and memsets: device memory is host memory ---- */

#define cudaMemcpyDefault 4

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, int kind) {
    READY();
    if (kind < 0 || kind > cudaMemcpyDefault) return ret(cudaErrorInvalidMemcpyDirection);
    if (count == 0) return cudaSuccess;
    if (dst == NULL || src == NULL) return ret(cudaErrorInvalidValue);
    memmove(dst, src, count);
    return cudaSuccess;
}

RT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind,
                                   cudaStream_t stream) {
    if (captured(stream)) return cudaSuccess;
    return cudaMemcpy(dst, src, count, kind);
}

RT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                       size_t count, cudaStream_t stream) {
    READY();
    if (!valid_device_rt(dstDevice) || !valid_device_rt(srcDevice))
        return ret(cudaErrorInvalidDevice);
    return cudaMemcpy(dst, src, count, cudaMemcpyDefault);
}

RT_API cudaError_t cudaMemset(void *devPtr, int value, size_t count) {
    READY();
    if (count == 0) return cudaSuccess;
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    memset(devPtr, value, count);
    return cudaSuccess;
}

RT_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream) {
    if (captured(stream)) return cudaSuccess;
    return cudaMemset(devPtr, value, count);
}

/* ---- host memory the runtime handed out or registered (for pointer attributes) ---- */

struct host_range {
    uintptr_t base;
    size_t size;
};
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_range *host_ranges;
static size_t n_host_ranges, cap_host_ranges;

static void host_add(void *p, size_t size) {
    pthread_mutex_lock(&host_lock);
    if (n_host_ranges == cap_host_ranges) {
        size_t cap = cap_host_ranges ? cap_host_ranges * 2 : 16;
        struct host_range *a = realloc(host_ranges, cap * sizeof *a);
        if (a != NULL) {
            host_ranges = a;
            cap_host_ranges = cap;
        }
    }
    if (n_host_ranges < cap_host_ranges)
        host_ranges[n_host_ranges++] = (struct host_range){(uintptr_t)p, size};
    pthread_mutex_unlock(&host_lock);
}

static void host_remove(void *p) {
    pthread_mutex_lock(&host_lock);
    for (size_t i = 0; i < n_host_ranges; i++) {
        if (host_ranges[i].base == (uintptr_t)p) {
            host_ranges[i] = host_ranges[--n_host_ranges];
            break;
        }
    }
    pthread_mutex_unlock(&host_lock);
}

static bool host_find(const void *p) {
    bool found = false;
    pthread_mutex_lock(&host_lock);
    for (size_t i = 0; i < n_host_ranges && !found; i++)
        found = (uintptr_t)p >= host_ranges[i].base &&
                (uintptr_t)p - host_ranges[i].base < host_ranges[i].size;
    pthread_mutex_unlock(&host_lock);
    return found;
}

RT_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags) {
    READY();
    if (pDevice == NULL || flags != 0) return ret(cudaErrorInvalidValue);
    if (!host_find(pHost)) return ret(cudaErrorInvalidValue);
    *pDevice = pHost; /* mapped memory has the same address on both sides (UVA) */
    return cudaSuccess;
}

RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                            const void *ptr) {
    READY();
    if (attributes == NULL) return ret(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof *attributes);
    attributes->device = -2; /* as the real runtime reports unregistered memory */
    CUdeviceptr base = 0;
    size_t size = 0;
    if (drv[F_cuMemGetAddressRange] != NULL &&
        DRV(cuMemGetAddressRange, lw_pfn_cuMemGetAddressRange_v3020)(&base, &size, to_dptr(ptr)) ==
            CUDA_SUCCESS) {
        attributes->type = cudaMemoryTypeDevice;
        attributes->device = current_device();
        attributes->devicePointer = (void *)ptr;
    } else if (host_find(ptr)) {
        attributes->type = cudaMemoryTypeHost;
        attributes->device = current_device();
        attributes->devicePointer = (void *)ptr;
        attributes->hostPointer = (void *)ptr;
    } else {
        attributes->hostPointer = (void *)ptr;
    }
    return cudaSuccess;
}

/* ---- kernels: registered and launched, never run ---- */

static void *fatbin_handle[1];

RT_API void **__cudaRegisterFatBinary(void *fatCubin) {
    return fatbin_handle;
}

RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {}

RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle) {}

RT_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, void *tid, void *bid,
                                   void *bDim, void *gDim, int *wSize) {}

RT_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant,
                              int global) {}

/* A __managed__ variable: the host reaches it through *hostVarPtrAddress,
 * which the runtime points at managed memory (host memory here). */
RT_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                     char *deviceAddress, const char *deviceName, int ext,
                                     size_t size, int constant, int global) {
    if (hostVarPtrAddress != NULL && *hostVarPtrAddress == NULL && size > 0)
        *hostVarPtrAddress = calloc(1, size);
}

RT_API char __cudaInitModule(void **fatCubinHandle) {
    return 1;
}

/* <<<grid, block, shmem, stream>>> pushes the configuration; the launch stub
 * pops it before cudaLaunchKernel. */
struct call_config {
    dim3 grid, block;
    size_t shmem;
    void *stream;
};
#define CALL_DEPTH 16
static __thread struct call_config call_configs[CALL_DEPTH];
static __thread int call_depth;

RT_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                            void *stream) {
    if (call_depth == CALL_DEPTH) return 1;
    call_configs[call_depth++] = (struct call_config){gridDim, blockDim, sharedMem, stream};
    return 0;
}

RT_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                              void *stream) {
    if (call_depth == 0) return ret(cudaErrorMissingConfiguration);
    struct call_config c = call_configs[--call_depth];
    if (gridDim != NULL) *gridDim = c.grid;
    if (blockDim != NULL) *blockDim = c.block;
    if (sharedMem != NULL) *sharedMem = c.shmem;
    if (stream != NULL) *(void **)stream = c.stream;
    return cudaSuccess;
}

RT_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream) {
    READY();
    if (gridDim.x == 0 || gridDim.y == 0 || gridDim.z == 0 || blockDim.x == 0 || blockDim.y == 0 ||
        blockDim.z == 0 || (unsigned long long)blockDim.x * blockDim.y * blockDim.z > 1024)
        return ret(cudaErrorInvalidConfiguration);
    (void)captured(stream);
    return cudaSuccess;
}

/* cudaLaunchConfig_t */
struct launch_config {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    void *attrs;
    unsigned int numAttrs;
};

RT_API cudaError_t cudaLaunchKernelExC(const struct launch_config *config, const void *func,
                                       void **args) {
    READY();
    if (config == NULL) return ret(cudaErrorInvalidValue);
    (void)captured(config->stream);
    return cudaSuccess;
}

/* Host functions run at once: every earlier operation of the stream is done. */
RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData) {
    READY();
    if (fn == NULL) return ret(cudaErrorInvalidValue);
    fn(userData);
    return cudaSuccess;
}

RT_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func) {
    READY();
    if (attr == NULL) return ret(cudaErrorInvalidValue);
    memset(attr, 0, sizeof *attr);
    attr->maxThreadsPerBlock = 1024;
    attr->numRegs = 32;
    attr->ptxVersion = FAKE_DEV_MAJOR * 10 + FAKE_DEV_MINOR;
    attr->binaryVersion = attr->ptxVersion;
    attr->maxDynamicSharedSizeBytes = FAKE_DEV_SMEM_BLOCK;
    attr->preferredShmemCarveout = -1;
    return cudaSuccess;
}

RT_API cudaError_t cudaFuncSetAttribute(const void *func, int attr, int value) {
    READY();
    return cudaSuccess;
}

RT_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
    READY();
    if (numBlocks == NULL || blockSize <= 0) return ret(cudaErrorInvalidValue);
    int n = FAKE_DEV_THREADS_PER_SM / blockSize;
    *numBlocks = n < 1 ? 1 : (n > 32 ? 32 : n);
    return cudaSuccess;
}

/* ---- streams: every operation completes at once ---- */

#define STREAM_MAGIC 0x5354524dU /* "STRM" */
struct fake_rt_stream {
    unsigned magic;
    unsigned flags;
    int priority;
    int capture_mode;
    cudaGraph_t capture; /* non-NULL while capturing */
    unsigned long long capture_id;
};

/* The legacy (0, 1) and per-thread (2) default streams are not objects. */
static struct fake_rt_stream *stream_obj(cudaStream_t s) {
    struct fake_rt_stream *o = (struct fake_rt_stream *)s;
    if ((uintptr_t)s <= 2 || o->magic != STREAM_MAGIC) return NULL;
    return o;
}

/* True when stream is being captured: the operation becomes one more node. */
static bool captured(cudaStream_t stream) {
    struct fake_rt_stream *s = stream_obj(stream);
    if (s == NULL || s->capture == NULL) return false;
    s->capture->nodes++;
    return true;
}

RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                int priority) {
    READY();
    if (pStream == NULL || flags > 1) return ret(cudaErrorInvalidValue);
    struct fake_rt_stream *s = calloc(1, sizeof *s);
    if (s == NULL) return ret(cudaErrorMemoryAllocation);
    s->magic = STREAM_MAGIC;
    s->flags = flags;
    s->priority = priority > 0 ? 0 : (priority < -5 ? -5 : priority);
    *pStream = (cudaStream_t)(void *)s;
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamCreate(cudaStream_t *pStream) {
    return cudaStreamCreateWithPriority(pStream, 0, 0);
}

RT_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    READY();
    struct fake_rt_stream *s = stream_obj(stream);
    if (s == NULL) return ret(cudaErrorInvalidResourceHandle);
    s->magic = 0;
    free(s);
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority) {
    READY();
    if (priority == NULL) return ret(cudaErrorInvalidValue);
    struct fake_rt_stream *s = stream_obj(stream);
    *priority = s != NULL ? s->priority : 0;
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamQuery(cudaStream_t stream) {
    READY();
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
    READY();
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
    READY();
    if (event == NULL) return ret(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

/* ---- events ---- */

#define EVENT_MAGIC 0x45564e54U /* "EVNT" */
#define cudaEventDisableTiming 0x02
struct fake_rt_event {
    unsigned magic;
    unsigned flags;
    bool recorded;
    struct timespec when;
};

static struct fake_rt_event *event_obj(cudaEvent_t e) {
    if (e == NULL || e->magic != EVENT_MAGIC) return NULL;
    return e;
}

RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
    READY();
    if (event == NULL || flags > 0x0f) return ret(cudaErrorInvalidValue);
    struct fake_rt_event *e = calloc(1, sizeof *e);
    if (e == NULL) return ret(cudaErrorMemoryAllocation);
    e->magic = EVENT_MAGIC;
    e->flags = flags;
    *event = e;
    return cudaSuccess;
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t *event) {
    return cudaEventCreateWithFlags(event, 0);
}

RT_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
    READY();
    struct fake_rt_event *e = event_obj(event);
    if (e == NULL) return ret(cudaErrorInvalidResourceHandle);
    e->magic = 0;
    free(e);
    return cudaSuccess;
}

RT_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    READY();
    struct fake_rt_event *e = event_obj(event);
    if (e == NULL) return ret(cudaErrorInvalidResourceHandle);
    clock_gettime(CLOCK_MONOTONIC, &e->when);
    e->recorded = true;
    return cudaSuccess;
}

RT_API cudaError_t cudaEventQuery(cudaEvent_t event) {
    READY();
    return event_obj(event) != NULL ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

RT_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
    return cudaEventQuery(event);
}

RT_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
    READY();
    struct fake_rt_event *a = event_obj(start), *b = event_obj(end);
    if (ms == NULL) return ret(cudaErrorInvalidValue);
    if (a == NULL || b == NULL || ((a->flags | b->flags) & cudaEventDisableTiming) != 0)
        return ret(cudaErrorInvalidResourceHandle);
    if (!a->recorded || !b->recorded) return ret(cudaErrorInvalidResourceHandle);
    double d = (double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
               (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6;
    *ms = (float)d;
    return cudaSuccess;
}

/* An event handle names the event in the exporting process only. */
struct ipc_event_data {
    uint64_t magic, pid;
    uintptr_t event;
};
#define IPC_EVENT_MAGIC 0x4c57495045564eULL

RT_API cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event) {
    READY();
    struct fake_rt_event *e = event_obj(event);
    if (handle == NULL) return ret(cudaErrorInvalidValue);
    if (e == NULL) return ret(cudaErrorInvalidResourceHandle);
    struct ipc_event_data d = {IPC_EVENT_MAGIC, (uint64_t)getpid(), (uintptr_t)e};
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &d, sizeof d);
    return cudaSuccess;
}

RT_API cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle) {
    READY();
    struct ipc_event_data d;
    memcpy(&d, handle.reserved, sizeof d);
    if (event == NULL || d.magic != IPC_EVENT_MAGIC) return ret(cudaErrorInvalidValue);
    return cudaEventCreateWithFlags(event, cudaEventDisableTiming | 0x04 /* interprocess */);
}

/* ---- graphs and stream capture: a captured graph has no nodes ---- */

#define GRAPH_MAGIC 0x47524150U /* "GRAP" */
struct fake_rt_graph_exec {
    unsigned magic;
};

enum {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
};

static atomic_ullong next_capture_id = 1;
static __thread int thread_capture_mode; /* cudaStreamCaptureModeGlobal */

RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, int mode) {
    READY();
    struct fake_rt_stream *s = stream_obj(stream);
    if (s == NULL) return ret(cudaErrorStreamCaptureUnsupported);
    if (s->capture != NULL) return ret(cudaErrorIllegalState);
    struct fake_rt_graph *g = calloc(1, sizeof *g);
    if (g == NULL) return ret(cudaErrorMemoryAllocation);
    g->magic = GRAPH_MAGIC;
    s->capture = g;
    s->capture_mode = mode;
    s->capture_id = atomic_fetch_add(&next_capture_id, 1);
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph) {
    READY();
    struct fake_rt_stream *s = stream_obj(stream);
    if (pGraph == NULL) return ret(cudaErrorInvalidValue);
    if (s == NULL || s->capture == NULL) return ret(cudaErrorIllegalState);
    *pGraph = s->capture;
    s->capture = NULL;
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, int *pCaptureStatus) {
    READY();
    if (pCaptureStatus == NULL) return ret(cudaErrorInvalidValue);
    struct fake_rt_stream *s = stream_obj(stream);
    *pCaptureStatus = s != NULL && s->capture != NULL ? cudaStreamCaptureStatusActive
                                                      : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

RT_API cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t stream, int *captureStatus_out,
                                               unsigned long long *id_out, cudaGraph_t *graph_out,
                                               const cudaGraphNode_t **dependencies_out,
                                               size_t *numDependencies_out) {
    READY();
    if (captureStatus_out == NULL) return ret(cudaErrorInvalidValue);
    struct fake_rt_stream *s = stream_obj(stream);
    bool active = s != NULL && s->capture != NULL;
    *captureStatus_out = active ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    if (id_out != NULL) *id_out = active ? s->capture_id : 0;
    if (graph_out != NULL) *graph_out = active ? s->capture : NULL;
    if (dependencies_out != NULL) *dependencies_out = NULL;
    if (numDependencies_out != NULL) *numDependencies_out = 0;
    return cudaSuccess;
}

RT_API cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode) {
    if (mode == NULL) return ret(cudaErrorInvalidValue);
    int old = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = old;
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    READY();
    if (graph == NULL || graph->magic != GRAPH_MAGIC) return ret(cudaErrorInvalidValue);
    graph->magic = 0;
    free(graph);
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes) {
    READY();
    if (graph == NULL || numNodes == NULL) return ret(cudaErrorInvalidValue);
    if (nodes != NULL) {
        /* Node handles: nothing can be done with them here but count. */
        size_t n = *numNodes < graph->nodes ? *numNodes : graph->nodes;
        for (size_t i = 0; i < n; i++)
            nodes[i] = (cudaGraphNode_t)(void *)((char *)graph + 1 + i);
        for (size_t i = n; i < *numNodes; i++)
            nodes[i] = NULL;
        *numNodes = n;
    } else {
        *numNodes = graph->nodes;
    }
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path, unsigned int flags) {
    READY();
    if (graph == NULL || path == NULL) return ret(cudaErrorInvalidValue);
    FILE *f = fopen(path, "w");
    if (f == NULL) return ret(cudaErrorOperatingSystem);
    fputs("digraph dot {\n}\n", f);
    fclose(f);
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                 unsigned long long flags) {
    READY();
    if (pGraphExec == NULL || graph == NULL) return ret(cudaErrorInvalidValue);
    struct fake_rt_graph_exec *x = calloc(1, sizeof *x);
    if (x == NULL) return ret(cudaErrorMemoryAllocation);
    x->magic = GRAPH_MAGIC;
    *pGraphExec = x;
    return cudaSuccess;
}

/* CUDA 12's signature (11's had an error node and a log buffer). */
RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                        unsigned long long flags) {
    return cudaGraphInstantiateWithFlags(pGraphExec, graph, flags);
}

RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
    READY();
    if (graphExec == NULL || graphExec->magic != GRAPH_MAGIC)
        return ret(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
    READY();
    if (graphExec == NULL || graphExec->magic != GRAPH_MAGIC)
        return ret(cudaErrorInvalidResourceHandle);
    graphExec->magic = 0;
    free(graphExec);
    return cudaSuccess;
}

/* ---- memory pools: one default pool per device, attributes remembered ---- */

#define POOL_BASE ((uintptr_t)0x2000)
enum {
    cudaMemPoolReuseFollowEventDependencies = 1,
    cudaMemPoolReuseAllowOpportunistic,
    cudaMemPoolReuseAllowInternalDependencies,
    cudaMemPoolAttrReleaseThreshold,
    cudaMemPoolAttrReservedMemCurrent,
    cudaMemPoolAttrReservedMemHigh,
    cudaMemPoolAttrUsedMemCurrent,
    cudaMemPoolAttrUsedMemHigh,
};
static atomic_ullong pool_attrs[FAKE_MAX_DEVICES][9];

static int pool_device(cudaMemPool_t pool) {
    uintptr_t v = (uintptr_t)pool;
    if (v < POOL_BASE || v >= POOL_BASE + FAKE_MAX_DEVICES) return -1;
    return valid_device_rt((int)(v - POOL_BASE)) ? (int)(v - POOL_BASE) : -1;
}

/* Requested sizes of live stream-ordered allocations, by address. */
struct pool_alloc {
    uintptr_t addr;
    size_t size;
    int dev;
    UT_hash_handle hh;
};
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_alloc *pool_allocs;
#define POOL_CHUNK ((unsigned long long)2 << 20) /* the pool reserves 2 MiB at a time */

static void pool_count_alloc(void *p, size_t size) {
    int dev = current_device();
    if (dev < 0 || dev >= FAKE_MAX_DEVICES) return;
    struct pool_alloc *a = calloc(1, sizeof *a);
    if (a == NULL) return;
    a->addr = (uintptr_t)p;
    a->size = size;
    a->dev = dev;
    pthread_mutex_lock(&pool_lock);
    HASH_ADD(hh, pool_allocs, addr, sizeof a->addr, a);
    atomic_ullong *at = pool_attrs[dev];
    unsigned long long used = atomic_fetch_add(&at[cudaMemPoolAttrUsedMemCurrent], size) + size;
    if (used > atomic_load(&at[cudaMemPoolAttrUsedMemHigh]))
        atomic_store(&at[cudaMemPoolAttrUsedMemHigh], used);
    unsigned long long reserved = (used + POOL_CHUNK - 1) / POOL_CHUNK * POOL_CHUNK;
    if (reserved > atomic_load(&at[cudaMemPoolAttrReservedMemCurrent]))
        atomic_store(&at[cudaMemPoolAttrReservedMemCurrent], reserved);
    if (reserved > atomic_load(&at[cudaMemPoolAttrReservedMemHigh]))
        atomic_store(&at[cudaMemPoolAttrReservedMemHigh], reserved);
    pthread_mutex_unlock(&pool_lock);
}

static void pool_count_free(void *p) {
    uintptr_t addr = (uintptr_t)p;
    pthread_mutex_lock(&pool_lock);
    struct pool_alloc *a = NULL;
    HASH_FIND(hh, pool_allocs, &addr, sizeof addr, a);
    if (a != NULL) {
        HASH_DEL(pool_allocs, a);
        atomic_fetch_sub(&pool_attrs[a->dev][cudaMemPoolAttrUsedMemCurrent], a->size);
        free(a);
    }
    pthread_mutex_unlock(&pool_lock);
}

RT_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device) {
    READY();
    if (memPool == NULL) return ret(cudaErrorInvalidValue);
    if (!valid_device_rt(device) || device >= FAKE_MAX_DEVICES) return ret(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)(POOL_BASE + (uintptr_t)device);
    return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, int attr, void *value) {
    READY();
    int dev = pool_device(memPool);
    if (dev < 0 || value == NULL || attr < 1 || attr > 8) return ret(cudaErrorInvalidValue);
    if (attr <= cudaMemPoolReuseAllowInternalDependencies)
        atomic_store(&pool_attrs[dev][attr], (unsigned long long)*(int *)value);
    else if (attr == cudaMemPoolAttrReleaseThreshold)
        atomic_store(&pool_attrs[dev][attr], *(unsigned long long *)value);
    else if (attr == cudaMemPoolAttrReservedMemHigh || attr == cudaMemPoolAttrUsedMemHigh)
        /* Only 0 may be set: the high-water mark restarts from the current value. */
        atomic_store(&pool_attrs[dev][attr], atomic_load(&pool_attrs[dev][attr - 1]));
    else
        return ret(cudaErrorInvalidValue);
    return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, int attr, void *value) {
    READY();
    int dev = pool_device(memPool);
    if (dev < 0 || value == NULL || attr < 1 || attr > 8) return ret(cudaErrorInvalidValue);
    unsigned long long v = atomic_load(&pool_attrs[dev][attr]);
    if (attr <= cudaMemPoolReuseAllowInternalDependencies)
        *(int *)value = (int)v;
    else
        *(unsigned long long *)value = v;
    return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const void *descList, size_t count) {
    READY();
    if (pool_device(memPool) < 0) return ret(cudaErrorInvalidValue);
    return cudaSuccess;
}

RT_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
    READY();
    int dev = pool_device(memPool);
    if (dev < 0) return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&pool_lock);
    unsigned long long used = atomic_load(&pool_attrs[dev][cudaMemPoolAttrUsedMemCurrent]);
    unsigned long long keep = used > minBytesToKeep ? used : minBytesToKeep;
    keep = (keep + POOL_CHUNK - 1) / POOL_CHUNK * POOL_CHUNK;
    if (keep < atomic_load(&pool_attrs[dev][cudaMemPoolAttrReservedMemCurrent]))
        atomic_store(&pool_attrs[dev][cudaMemPoolAttrReservedMemCurrent], keep);
    pthread_mutex_unlock(&pool_lock);
    return cudaSuccess;
}
