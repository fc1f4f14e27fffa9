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

/* The stream is passed on as given: the stand-in driver accepts any. */
static cudaError_t malloc_async_stream(enum drv_fn fn, void **devPtr, size_t size,
                                       cudaStream_t stream) {
    READY();
    if (devPtr == NULL) return ret(cudaErrorInvalidValue);
    if (drv[fn] == NULL) return ret(cudaErrorCallRequiresNewerDriver);
    CUdeviceptr d = 0;
    CUresult r = ((lw_pfn_cuMemAllocAsync_v11020)drv[fn])(&d, size, (CUstream)stream);
    if (r == CUDA_SUCCESS) *devPtr = to_ptr(d);
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
    return ret(
        from_driver(((lw_pfn_cuMemFreeAsync_v11020)drv[fn])(to_dptr(devPtr), (CUstream)stream)));
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
    if (r == CUDA_SUCCESS) *ptr = to_ptr(d);
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

RT_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
    READY();
    NEED(cuMemAllocHost);
    return ret(from_driver(DRV(cuMemAllocHost, lw_pfn_cuMemAllocHost_v3020)(ptr, size)));
}

RT_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags) {
    READY();
    NEED(cuMemHostAlloc);
    /* cudaHostAlloc* flags have the values of CU_MEMHOSTALLOC_*. */
    return ret(from_driver(DRV(cuMemHostAlloc, lw_pfn_cuMemHostAlloc_v2020)(pHost, size, flags)));
}

RT_API cudaError_t cudaFreeHost(void *ptr) {
    READY();
    if (ptr == NULL) return cudaSuccess;
    NEED(cuMemFreeHost);
    return ret(from_driver(DRV(cuMemFreeHost, lw_pfn_cuMemFreeHost_v2000)(ptr)));
}

RT_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags) {
    READY();
    NEED(cuMemHostRegister);
    return ret(
        from_driver(DRV(cuMemHostRegister, lw_pfn_cuMemHostRegister_v6050)(ptr, size, flags)));
}

RT_API cudaError_t cudaHostUnregister(void *ptr) {
    READY();
    NEED(cuMemHostUnregister);
    return ret(from_driver(DRV(cuMemHostUnregister, lw_pfn_cuMemHostUnregister_v4000)(ptr)));
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
