/* SPDX-License-Identifier: Apache-2.0 */
/* Self-check of the stand-in driver's client half (tests/stubs/
 * fake_cuda_clients.c), without leakwatch: every function numba 0.61's ctypes
 * binding and PyCUDA 2025.1's _driver extension need is exported, and the
 * ones they use behave as a real driver on one H100: device attributes,
 * copies that copy, memsets, pointer attributes, streams, events, contexts,
 * modules whose launches do nothing. Exit 0 when every check passes.
 *
 *   drv_clients          build/tests/lib/libcuda.so.1 (CUDA 13.0)
 *   drv_clients cuda12   run with LD_LIBRARY_PATH=build/tests/lib-cuda12: the
 *                        CUDA 12.8 variant, without cuCtxGetDevice_v2 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../stubs/fake_common.h"

#include "checks.h"

/* Looked up, not linked: a missing one is a failed check, not a link error. */
#define FN(name, type) ((type)sym(#name))
static void *sym(const char *name) {
    void *p = dlsym(RTLD_DEFAULT, name);
    if (p == NULL) {
        fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
        failures++;
        exit(1); /* calling through NULL would crash: stop here */
    }
    return p;
}

/* Every function numba 0.61's binding looks up (numba/cuda/cudadrv/drvapi.py,
 * API_PROTOTYPES): it takes NAME_v2 if exported, else NAME. */
static const char *const numba_names[] = {"cuCtxCreate",
                                          "cuCtxDestroy",
                                          "cuCtxEnablePeerAccess",
                                          "cuCtxGetCurrent",
                                          "cuCtxGetDevice",
                                          "cuCtxPopCurrent",
                                          "cuCtxPushCurrent",
                                          "cuCtxSynchronize",
                                          "cuDeviceCanAccessPeer",
                                          "cuDeviceComputeCapability",
                                          "cuDeviceGet",
                                          "cuDeviceGetAttribute",
                                          "cuDeviceGetCount",
                                          "cuDeviceGetName",
                                          "cuDeviceGetUuid",
                                          "cuDevicePrimaryCtxGetState",
                                          "cuDevicePrimaryCtxRelease",
                                          "cuDevicePrimaryCtxReset",
                                          "cuDevicePrimaryCtxRetain",
                                          "cuDevicePrimaryCtxSetFlags",
                                          "cuDriverGetVersion",
                                          "cuEventCreate",
                                          "cuEventDestroy",
                                          "cuEventElapsedTime",
                                          "cuEventQuery",
                                          "cuEventRecord",
                                          "cuEventSynchronize",
                                          "cuFuncGetAttribute",
                                          "cuFuncSetCacheConfig",
                                          "cuInit",
                                          "cuIpcCloseMemHandle",
                                          "cuIpcGetMemHandle",
                                          "cuIpcOpenMemHandle",
                                          "cuLaunchCooperativeKernel",
                                          "cuLaunchKernel",
                                          "cuLinkAddData",
                                          "cuLinkAddFile",
                                          "cuLinkComplete",
                                          "cuLinkCreate",
                                          "cuLinkDestroy",
                                          "cuMemAlloc",
                                          "cuMemAllocManaged",
                                          "cuMemFree",
                                          "cuMemFreeHost",
                                          "cuMemGetAddressRange",
                                          "cuMemGetInfo",
                                          "cuMemHostAlloc",
                                          "cuMemHostGetDevicePointer",
                                          "cuMemHostGetFlags",
                                          "cuMemHostRegister",
                                          "cuMemHostUnregister",
                                          "cuMemcpyDtoD",
                                          "cuMemcpyDtoDAsync",
                                          "cuMemcpyDtoH",
                                          "cuMemcpyDtoHAsync",
                                          "cuMemcpyHtoD",
                                          "cuMemcpyHtoDAsync",
                                          "cuMemsetD8",
                                          "cuMemsetD8Async",
                                          "cuModuleGetFunction",
                                          "cuModuleGetGlobal",
                                          "cuModuleLoadDataEx",
                                          "cuModuleUnload",
                                          "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                          "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
                                          "cuOccupancyMaxPotentialBlockSize",
                                          "cuOccupancyMaxPotentialBlockSizeWithFlags",
                                          "cuPointerGetAttribute",
                                          "cuProfilerStart",
                                          "cuProfilerStop",
                                          "cuStreamAddCallback",
                                          "cuStreamCreate",
                                          "cuStreamDestroy",
                                          "cuStreamSynchronize",
                                          "cuStreamWaitEvent"};

/* Every driver symbol PyCUDA 2025.1's _driver extension links
 * (nm -D --undefined-only _driver.cpython-313-x86_64-linux-gnu.so). */
static const char *const pycuda_names[] = {"cuArray3DCreate_v2",
                                           "cuArray3DGetDescriptor_v2",
                                           "cuArrayCreate_v2",
                                           "cuArrayDestroy",
                                           "cuArrayGetDescriptor_v2",
                                           "cuCtxAttach",
                                           "cuCtxCreate_v2",
                                           "cuCtxDetach",
                                           "cuCtxDisablePeerAccess",
                                           "cuCtxEnablePeerAccess",
                                           "cuCtxGetApiVersion",
                                           "cuCtxGetCacheConfig",
                                           "cuCtxGetDevice",
                                           "cuCtxGetLimit",
                                           "cuCtxGetSharedMemConfig",
                                           "cuCtxPopCurrent_v2",
                                           "cuCtxPushCurrent_v2",
                                           "cuCtxSetCacheConfig",
                                           "cuCtxSetLimit",
                                           "cuCtxSetSharedMemConfig",
                                           "cuCtxSynchronize",
                                           "cuDeviceCanAccessPeer",
                                           "cuDeviceComputeCapability",
                                           "cuDeviceGet",
                                           "cuDeviceGetAttribute",
                                           "cuDeviceGetByPCIBusId",
                                           "cuDeviceGetCount",
                                           "cuDeviceGetName",
                                           "cuDeviceGetPCIBusId",
                                           "cuDevicePrimaryCtxRelease_v2",
                                           "cuDevicePrimaryCtxRetain",
                                           "cuDeviceTotalMem_v2",
                                           "cuDriverGetVersion",
                                           "cuEventCreate",
                                           "cuEventDestroy_v2",
                                           "cuEventElapsedTime",
                                           "cuEventQuery",
                                           "cuEventRecord",
                                           "cuEventSynchronize",
                                           "cuFuncGetAttribute",
                                           "cuFuncSetAttribute",
                                           "cuFuncSetBlockShape",
                                           "cuFuncSetCacheConfig",
                                           "cuFuncSetSharedSize",
                                           "cuGLCtxCreate_v2",
                                           "cuGLInit",
                                           "cuGLMapBufferObject_v2",
                                           "cuGLRegisterBufferObject",
                                           "cuGLUnmapBufferObject",
                                           "cuGLUnregisterBufferObject",
                                           "cuGetErrorString",
                                           "cuGraphicsGLRegisterBuffer",
                                           "cuGraphicsGLRegisterImage",
                                           "cuGraphicsMapResources",
                                           "cuGraphicsResourceGetMappedPointer_v2",
                                           "cuGraphicsSubResourceGetMappedArray",
                                           "cuGraphicsUnmapResources",
                                           "cuGraphicsUnregisterResource",
                                           "cuInit",
                                           "cuIpcCloseMemHandle",
                                           "cuIpcGetEventHandle",
                                           "cuIpcGetMemHandle",
                                           "cuIpcOpenEventHandle",
                                           "cuIpcOpenMemHandle_v2",
                                           "cuLaunch",
                                           "cuLaunchGrid",
                                           "cuLaunchGridAsync",
                                           "cuLaunchKernel",
                                           "cuLinkAddData_v2",
                                           "cuLinkAddFile_v2",
                                           "cuLinkComplete",
                                           "cuLinkCreate_v2",
                                           "cuLinkDestroy",
                                           "cuMemAllocManaged",
                                           "cuMemAllocPitch_v2",
                                           "cuMemAlloc_v2",
                                           "cuMemFreeHost",
                                           "cuMemFree_v2",
                                           "cuMemGetAddressRange_v2",
                                           "cuMemGetInfo_v2",
                                           "cuMemHostAlloc",
                                           "cuMemHostGetDevicePointer_v2",
                                           "cuMemHostGetFlags",
                                           "cuMemHostRegister_v2",
                                           "cuMemHostUnregister",
                                           "cuMemcpy2DAsync_v2",
                                           "cuMemcpy2DUnaligned_v2",
                                           "cuMemcpy2D_v2",
                                           "cuMemcpy3DAsync_v2",
                                           "cuMemcpy3DPeer",
                                           "cuMemcpy3DPeerAsync",
                                           "cuMemcpy3D_v2",
                                           "cuMemcpyAtoA_v2",
                                           "cuMemcpyAtoD_v2",
                                           "cuMemcpyAtoH_v2",
                                           "cuMemcpyDtoA_v2",
                                           "cuMemcpyDtoDAsync_v2",
                                           "cuMemcpyDtoD_v2",
                                           "cuMemcpyDtoHAsync_v2",
                                           "cuMemcpyDtoH_v2",
                                           "cuMemcpyHtoA_v2",
                                           "cuMemcpyHtoDAsync_v2",
                                           "cuMemcpyHtoD_v2",
                                           "cuMemcpyPeer",
                                           "cuMemcpyPeerAsync",
                                           "cuMemsetD16Async",
                                           "cuMemsetD16_v2",
                                           "cuMemsetD2D16Async",
                                           "cuMemsetD2D16_v2",
                                           "cuMemsetD2D32Async",
                                           "cuMemsetD2D32_v2",
                                           "cuMemsetD2D8Async",
                                           "cuMemsetD2D8_v2",
                                           "cuMemsetD32Async",
                                           "cuMemsetD32_v2",
                                           "cuMemsetD8Async",
                                           "cuMemsetD8_v2",
                                           "cuModuleGetFunction",
                                           "cuModuleGetGlobal_v2",
                                           "cuModuleGetSurfRef",
                                           "cuModuleGetTexRef",
                                           "cuModuleLoad",
                                           "cuModuleLoadData",
                                           "cuModuleLoadDataEx",
                                           "cuModuleUnload",
                                           "cuParamSetSize",
                                           "cuParamSetTexRef",
                                           "cuParamSetf",
                                           "cuParamSeti",
                                           "cuParamSetv",
                                           "cuProfilerInitialize",
                                           "cuProfilerStart",
                                           "cuProfilerStop",
                                           "cuStreamAttachMemAsync",
                                           "cuStreamCreate",
                                           "cuStreamDestroy_v2",
                                           "cuStreamQuery",
                                           "cuStreamSynchronize",
                                           "cuStreamWaitEvent",
                                           "cuSurfRefGetArray",
                                           "cuSurfRefSetArray",
                                           "cuTexRefCreate",
                                           "cuTexRefDestroy",
                                           "cuTexRefGetAddressMode",
                                           "cuTexRefGetAddress_v2",
                                           "cuTexRefGetArray",
                                           "cuTexRefGetFilterMode",
                                           "cuTexRefGetFlags",
                                           "cuTexRefGetFormat",
                                           "cuTexRefSetAddress2D_v3",
                                           "cuTexRefSetAddressMode",
                                           "cuTexRefSetAddress_v2",
                                           "cuTexRefSetArray",
                                           "cuTexRefSetFilterMode",
                                           "cuTexRefSetFlags",
                                           "cuTexRefSetFormat"};

static void check_exports(bool cuda12) {
    char v2[128];
    for (size_t i = 0; i < sizeof numba_names / sizeof numba_names[0]; i++) {
        snprintf(v2, sizeof v2, "%s_v2", numba_names[i]);
        if (dlsym(RTLD_DEFAULT, v2) == NULL && dlsym(RTLD_DEFAULT, numba_names[i]) == NULL) {
            fprintf(stderr, "numba needs %s or %s\n", v2, numba_names[i]);
            failures++;
        }
    }
    for (size_t i = 0; i < sizeof pycuda_names / sizeof pycuda_names[0]; i++) {
        if (dlsym(RTLD_DEFAULT, pycuda_names[i]) == NULL) {
            fprintf(stderr, "PyCUDA needs %s\n", pycuda_names[i]);
            failures++;
        }
    }
    /* numba calls what it finds as cuCtxGetDevice_v2 with one argument: a
     * CUDA 13 driver's two-argument function. The CUDA 12 variant has none. */
    EQ(dlsym(RTLD_DEFAULT, "cuCtxGetDevice_v2") == NULL, cuda12);
    int v = 0;
    EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
    EQ(v, cuda12 ? 12080 : 13000);
}

typedef CUresult (*attr_fn)(int *, int, CUdevice);
typedef CUresult (*name_fn)(char *, int, CUdevice);
typedef CUresult (*cc_fn)(int *, int *, CUdevice);
typedef CUresult (*total_fn)(size_t *, CUdevice);
typedef CUresult (*bus_fn)(char *, int, CUdevice);
typedef CUresult (*by_bus_fn)(CUdevice *, const char *);
typedef CUresult (*uuid_fn)(CUuuid *, CUdevice);

static void check_device(void) {
    attr_fn attr = FN(cuDeviceGetAttribute, attr_fn);
    int v = -1;
    EQ(attr(&v, 75, 0), CUDA_SUCCESS); /* COMPUTE_CAPABILITY_MAJOR */
    EQ(v, 9);
    EQ(attr(&v, 76, 0), CUDA_SUCCESS);
    EQ(v, 0);
    EQ(attr(&v, 16, 0), CUDA_SUCCESS); /* MULTIPROCESSOR_COUNT */
    EQ(v, 132);
    EQ(attr(&v, 1, 0), CUDA_SUCCESS); /* MAX_THREADS_PER_BLOCK */
    EQ(v, 1024);
    EQ(attr(&v, 10, 0), CUDA_SUCCESS); /* WARP_SIZE */
    EQ(v, 32);
    EQ(attr(&v, 41, 0), CUDA_SUCCESS); /* UNIFIED_ADDRESSING */
    EQ(v, 1);
    EQ(attr(&v, 39, 0), CUDA_SUCCESS); /* MAX_THREADS_PER_MULTIPROCESSOR */
    EQ(v, 2048);
    int bus0 = 0, bus1 = 0;
    EQ(attr(&bus0, 33, 0), CUDA_SUCCESS); /* PCI_BUS_ID: one per device */
    EQ(attr(&bus1, 33, 1), CUDA_SUCCESS);
    CHECK(bus0 != bus1);
    EQ(attr(&v, 0, 0), CUDA_ERROR_INVALID_VALUE);
    EQ(attr(&v, 100000, 0), CUDA_ERROR_INVALID_VALUE);
    EQ(attr(&v, 75, 99), CUDA_ERROR_INVALID_DEVICE);

    char name[128] = "";
    EQ(FN(cuDeviceGetName, name_fn)(name, sizeof name, 0), CUDA_SUCCESS);
    CHECK(strstr(name, "H100") != NULL);
    int major = 0, minor = -1;
    EQ(FN(cuDeviceComputeCapability, cc_fn)(&major, &minor, 0), CUDA_SUCCESS);
    EQ(major, 9);
    EQ(minor, 0);
    size_t total = 0;
    EQ(FN(cuDeviceTotalMem_v2, total_fn)(&total, 0), CUDA_SUCCESS);
    EQ(total, FAKE_DEFAULT_MEM_BYTES);
    char bus[32] = "";
    CUdevice dev = -1;
    EQ(FN(cuDeviceGetPCIBusId, bus_fn)(bus, sizeof bus, 1), CUDA_SUCCESS);
    EQ(FN(cuDeviceGetByPCIBusId, by_bus_fn)(&dev, bus), CUDA_SUCCESS);
    EQ(dev, 1);
    CUuuid u0, u1;
    EQ(FN(cuDeviceGetUuid, uuid_fn)(&u0, 0), CUDA_SUCCESS);
    EQ(FN(cuDeviceGetUuid_v2, uuid_fn)(&u1, 1), CUDA_SUCCESS);
    CHECK(memcmp(&u0, &u1, sizeof u0) != 0);
}

typedef CUresult (*htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*htod_async_fn)(CUdeviceptr, const void *, size_t, CUstream);
typedef CUresult (*dtoh_fn)(void *, CUdeviceptr, size_t);
typedef CUresult (*dtoh_async_fn)(void *, CUdeviceptr, size_t, CUstream);
typedef CUresult (*dtod_fn)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*memset8_fn)(CUdeviceptr, unsigned char, size_t);
typedef CUresult (*memset32_fn)(CUdeviceptr, unsigned int, size_t);
typedef CUresult (*memset2d16_fn)(CUdeviceptr, size_t, unsigned short, size_t, size_t);
typedef CUresult (*ptr_attr_fn)(void *, int, CUdeviceptr);
typedef CUresult (*host_devptr_fn)(CUdeviceptr *, void *, unsigned int);

/* The 2D copy descriptor of cuda.h (CUDA_MEMCPY2D_v2). */
struct memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
};
typedef CUresult (*memcpy2d_fn)(const struct memcpy2d *);

static void check_memory(void) {
    htod_fn htod = FN(cuMemcpyHtoD_v2, htod_fn);
    dtoh_fn dtoh = FN(cuMemcpyDtoH_v2, dtoh_fn);
    enum { N = 3000 }; /* not a whole number of pages */
    static float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i * 0.5f;
    CUdeviceptr a = 0, b = 0;
    EQ(cuMemAlloc_v2(&a, sizeof in), CUDA_SUCCESS);
    EQ(cuMemAlloc_v2(&b, sizeof in), CUDA_SUCCESS);
    EQ(htod(a, in, sizeof in), CUDA_SUCCESS);
    EQ(FN(cuMemcpyDtoD_v2, dtod_fn)(b, a, sizeof in), CUDA_SUCCESS);
    EQ(dtoh(out, b, sizeof out), CUDA_SUCCESS);
    CHECK(memcmp(in, out, sizeof in) == 0);
    /* An offset inside the allocation, and the async forms. */
    memset(out, 0, sizeof out);
    EQ(FN(cuMemcpyHtoDAsync_v2, htod_async_fn)(a + 4 * 100, in, 4 * 10, NULL), CUDA_SUCCESS);
    EQ(FN(cuMemcpyDtoHAsync_v2, dtoh_async_fn)(out, a + 4 * 100, 4 * 10, NULL), CUDA_SUCCESS);
    CHECK(memcmp(in, out, 4 * 10) == 0);
    /* Past the end, an unknown address, a freed one: refused, nothing copied. */
    EQ(htod(a + 4096, in, sizeof in), CUDA_ERROR_INVALID_VALUE);
    EQ(dtoh(out, (CUdeviceptr)0x1234, 4), CUDA_ERROR_INVALID_VALUE);
    EQ(htod(a, in, 0), CUDA_SUCCESS);
    /* Memsets. */
    EQ(FN(cuMemsetD8_v2, memset8_fn)(a, 0xab, 16), CUDA_SUCCESS);
    unsigned char bytes[16];
    EQ(dtoh(bytes, a, 16), CUDA_SUCCESS);
    for (int i = 0; i < 16; i++)
        EQ(bytes[i], 0xab);
    EQ(FN(cuMemsetD32_v2, memset32_fn)(a, 0x01020304u, 4), CUDA_SUCCESS);
    uint32_t words[4];
    EQ(dtoh(words, a, sizeof words), CUDA_SUCCESS);
    for (int i = 0; i < 4; i++)
        EQ(words[i], 0x01020304u);
    EQ(FN(cuMemsetD32_v2, memset32_fn)(a + 1, 0, 1), CUDA_ERROR_INVALID_VALUE); /* unaligned */
    /* 2D: 3 rows of 2 shorts, 8 bytes apart. */
    EQ(FN(cuMemsetD8_v2, memset8_fn)(a, 0, 32), CUDA_SUCCESS);
    EQ(FN(cuMemsetD2D16_v2, memset2d16_fn)(a, 8, 0x7777, 2, 3), CUDA_SUCCESS);
    uint16_t shorts[12];
    EQ(dtoh(shorts, a, sizeof shorts), CUDA_SUCCESS);
    for (int i = 0; i < 12; i++)
        EQ(shorts[i], (i % 4) < 2 ? 0x7777 : 0);
    /* A 2D copy from host rows of 12 bytes to device rows of 16. */
    const char src[36] = "abcdefghijklmnopqrstuvwxyz0123456789";
    struct memcpy2d c = {0};
    c.srcMemoryType = 1; /* host */
    c.srcHost = src;
    c.srcPitch = 12;
    c.dstMemoryType = 2; /* device */
    c.dstDevice = b;
    c.dstPitch = 16;
    c.WidthInBytes = 12;
    c.Height = 3;
    EQ(FN(cuMemcpy2D_v2, memcpy2d_fn)(&c), CUDA_SUCCESS);
    char back[48];
    EQ(dtoh(back, b, sizeof back), CUDA_SUCCESS);
    CHECK(memcmp(back, src, 12) == 0 && memcmp(back + 16, src + 12, 12) == 0 &&
          memcmp(back + 32, src + 24, 12) == 0);
    /* Unified copies: host to device and back with cuMemcpy. */
    double hd = 3.25, hd2 = 0;
    EQ(FN(cuMemcpy, dtod_fn)(a, (CUdeviceptr)(uintptr_t)&hd, sizeof hd), CUDA_SUCCESS);
    EQ(FN(cuMemcpy, dtod_fn)((CUdeviceptr)(uintptr_t)&hd2, a, sizeof hd), CUDA_SUCCESS);
    EQ(hd2 == 3.25, 1);

    /* Pointer attributes: device memory, pinned host memory, unknown. */
    ptr_attr_fn pattr = FN(cuPointerGetAttribute, ptr_attr_fn);
    unsigned int type = 0;
    CUdeviceptr p = 0, start = 0;
    size_t size = 0;
    int ordinal = -1;
    EQ(pattr(&type, 2, a + 10), CUDA_SUCCESS); /* MEMORY_TYPE */
    EQ(type, 2);                               /* DEVICE */
    EQ(pattr(&p, 3, a + 10), CUDA_SUCCESS);    /* DEVICE_POINTER */
    EQ(p, a + 10);
    EQ(pattr(&start, 11, a + 10), CUDA_SUCCESS); /* RANGE_START_ADDR */
    EQ(start, a);
    EQ(pattr(&size, 12, a + 10), CUDA_SUCCESS); /* RANGE_SIZE */
    EQ(size, (sizeof in + FAKE_ALLOC_ALIGN - 1) / FAKE_ALLOC_ALIGN * FAKE_ALLOC_ALIGN);
    EQ(pattr(&ordinal, 9, a), CUDA_SUCCESS); /* DEVICE_ORDINAL */
    EQ(ordinal, 0);
    EQ(pattr(&type, 2, (CUdeviceptr)(uintptr_t)&hd), CUDA_ERROR_INVALID_VALUE);
    void *host = NULL;
    EQ(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    EQ(pattr(&type, 2, (CUdeviceptr)(uintptr_t)host), CUDA_SUCCESS);
    EQ(type, 1); /* HOST */
    CUdeviceptr mapped = 0;
    EQ(FN(cuMemHostGetDevicePointer_v2, host_devptr_fn)(&mapped, host, 0), CUDA_SUCCESS);
    EQ(mapped, (CUdeviceptr)(uintptr_t)host);
    EQ(htod(mapped, "pinned", 7), CUDA_SUCCESS); /* a mapped pointer is a device pointer too */
    CHECK(strcmp(host, "pinned") == 0);
    EQ(cuMemFreeHost(host), CUDA_SUCCESS);

    /* Nothing here allocated device memory besides the two cuMemAlloc_v2. */
    EQ(fake_cuda_live_allocations(), 2);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    EQ(dtoh(out, a, 4), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_live_allocations(), 0);
}

typedef struct CUevent_st *CUevent;
typedef CUresult (*stream_create_fn)(CUstream *, unsigned int);
typedef CUresult (*stream_fn)(CUstream);
typedef CUresult (*event_create_fn)(CUevent *, unsigned int);
typedef CUresult (*event_fn)(CUevent);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*elapsed_fn)(float *, CUevent, CUevent);
typedef void (*callback_fn)(CUstream, CUresult, void *);
typedef CUresult (*add_callback_fn)(CUstream, callback_fn, void *, unsigned int);

static void on_stream_done(CUstream s, CUresult status, void *data) {
    *(int *)data = status == CUDA_SUCCESS ? 1 : -1;
}

static void check_streams_and_events(void) {
    CUstream s = NULL;
    EQ(FN(cuStreamCreate, stream_create_fn)(&s, 0), CUDA_SUCCESS);
    CHECK(s != NULL);
    EQ(FN(cuStreamQuery, stream_fn)(s), CUDA_SUCCESS);
    EQ(FN(cuStreamSynchronize, stream_fn)(s), CUDA_SUCCESS);
    int called = 0;
    EQ(FN(cuStreamAddCallback, add_callback_fn)(s, on_stream_done, &called, 0), CUDA_SUCCESS);
    EQ(called, 1);
    CUevent e0 = NULL, e1 = NULL;
    EQ(FN(cuEventCreate, event_create_fn)(&e0, 0), CUDA_SUCCESS);
    EQ(FN(cuEventCreate, event_create_fn)(&e1, 0), CUDA_SUCCESS);
    float ms = -1;
    elapsed_fn elapsed = FN(cuEventElapsedTime, elapsed_fn);
    EQ(elapsed(&ms, e0, e1), CUDA_ERROR_INVALID_HANDLE); /* not recorded yet */
    EQ(FN(cuEventRecord, event_record_fn)(e0, s), CUDA_SUCCESS);
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    EQ(FN(cuEventRecord, event_record_fn)(e1, s), CUDA_SUCCESS);
    EQ(FN(cuEventSynchronize, event_fn)(e1), CUDA_SUCCESS);
    EQ(FN(cuEventQuery, event_fn)(e1), CUDA_SUCCESS);
    EQ(elapsed(&ms, e0, e1), CUDA_SUCCESS);
    CHECK(ms >= 1.0f); /* slept 2 ms between the two records */
    EQ(FN(cuEventDestroy_v2, event_fn)(e0), CUDA_SUCCESS);
    EQ(FN(cuEventDestroy_v2, event_fn)(e0), CUDA_ERROR_INVALID_HANDLE);
    EQ(FN(cuEventDestroy_v2, event_fn)(e1), CUDA_SUCCESS);
    EQ(FN(cuStreamDestroy_v2, stream_fn)(s), CUDA_SUCCESS);
    EQ(FN(cuStreamDestroy_v2, stream_fn)(s), CUDA_ERROR_INVALID_HANDLE);
    EQ(FN(cuStreamSynchronize, stream_fn)(s), CUDA_ERROR_INVALID_HANDLE);
    EQ(FN(cuStreamSynchronize, stream_fn)(NULL), CUDA_SUCCESS); /* the default stream */
}

typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef CUresult (*ctx_create_fn)(CUcontext *, unsigned int, CUdevice);
typedef CUresult (*ctx_destroy_fn)(CUcontext);
typedef CUresult (*module_load_fn)(CUmodule *, const void *);
typedef CUresult (*module_fn)(CUmodule);
typedef CUresult (*get_function_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*get_global_fn)(CUdeviceptr *, size_t *, CUmodule, const char *);
typedef CUresult (*array_create_fn)(void **, const void *);
typedef CUresult (*error_string_fn)(CUresult, const char **);

static void check_contexts_modules_and_the_rest(void) {
    /* cuCtxCreate: the device's (primary) context, pushed; destroy pops it. */
    CUcontext before = NULL, c = NULL, cur = NULL;
    EQ(cuCtxGetCurrent(&before), CUDA_SUCCESS);
    EQ(FN(cuCtxCreate_v2, ctx_create_fn)(&c, 0, 1), CUDA_SUCCESS);
    EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CHECK(cur == c && c != NULL);
    CUdevice dev = -1;
    EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    EQ(dev, 1);
    EQ(FN(cuCtxDestroy_v2, ctx_destroy_fn)(c), CUDA_SUCCESS);
    EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    CHECK(cur == before);

    /* Any image loads; functions are found; launches succeed and do nothing. */
    CUmodule m = NULL;
    EQ(FN(cuModuleLoadData, module_load_fn)(&m, "\x7f"
                                                "ELF not really"),
       CUDA_SUCCESS);
    CUfunction f = NULL;
    EQ(FN(cuModuleGetFunction, get_function_fn)(&f, m, "kernel"), CUDA_SUCCESS);
    launch_fn launch = FN(cuLaunchKernel, launch_fn);
    EQ(launch(f, 4, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    EQ(launch(f, 4, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr g = 0;
    size_t gsize = 0;
    EQ(FN(cuModuleGetGlobal_v2, get_global_fn)(&g, &gsize, m, "x"), CUDA_ERROR_NOT_FOUND);
    EQ(FN(cuModuleUnload, module_fn)(m), CUDA_SUCCESS);
    EQ(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
    EQ(FN(cuModuleUnload, module_fn)(m), CUDA_ERROR_INVALID_HANDLE);

    /* Arrays allocate device memory no hook sees: refused. */
    void *arr = NULL;
    char desc[32] = {0};
    EQ(FN(cuArrayCreate_v2, array_create_fn)(&arr, desc), CUDA_ERROR_NOT_SUPPORTED);
    EQ(fake_cuda_live_allocations(), 0);

    const char *s = NULL;
    EQ(FN(cuGetErrorString, error_string_fn)(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    CHECK(s != NULL && strcmp(s, "out of memory") == 0);
    EQ(FN(cuGetErrorName, error_string_fn)(CUDA_ERROR_INVALID_CONTEXT, &s), CUDA_SUCCESS);
    CHECK(s != NULL && strcmp(s, "CUDA_ERROR_INVALID_CONTEXT") == 0);
    EQ(FN(cuGetErrorString, error_string_fn)(123456, &s), CUDA_ERROR_INVALID_VALUE);
}

int main(int argc, char **argv) {
    bool cuda12 = argc > 1 && strcmp(argv[1], "cuda12") == 0;
    check_exports(cuda12);
    EQ(cuInit(0), CUDA_SUCCESS);
    check_device();
    CUcontext ctx = NULL;
    EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    const char *no_reserve = getenv("FAKE_CUDA_NO_RESERVE");
    if (no_reserve != NULL && strcmp(no_reserve, "1") == 0)
        /* Device addresses are plain numbers then (make check-aarch64): no
         * copy can reach them. */
        printf("drv_clients: copies skipped (FAKE_CUDA_NO_RESERVE=1: device memory is not host "
               "memory)\n");
    else
        check_memory();
    check_streams_and_events();
    check_contexts_modules_and_the_rest();
    if (failures != 0) fprintf(stderr, "drv_clients: %d check(s) failed\n", failures);
    return failures != 0;
}
