/* SPDX-License-Identifier: Apache-2.0 */
/* The few CUDA driver and runtime declarations leakwatch needs.
 *
 * leakwatch must build without the CUDA toolkit, so these mirror cuda.h and
 * cuda_runtime_api.h (CUDA 12/13). tests/cuda_abi_check.c assigns each of our
 * function-pointer types to cuda.h's PFN_* type when a toolkit is present, so a
 * mismatch fails to compile. */
#ifndef LEAKWATCH_CUDA_API_H
#define LEAKWATCH_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* tests/cuda_abi_check.c defines this to build the function types below from
 * the toolkit's own scalar types. */
#ifndef LW_CUDA_TYPES_FROM_TOOLKIT
typedef int CUresult;
typedef int cudaError_t;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUstream_st *CUstream;
typedef struct CUctx_st *CUcontext;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;

typedef enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* Same values as CUdriverProcAddressQueryResult. */
enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
    cudaDriverEntryPointVersionNotSufficent = 2
};

typedef enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 1
} CUmemAllocationType;
typedef enum {
    CU_MEM_HANDLE_TYPE_NONE = 0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
} CUmemAllocationHandleType;
typedef enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0,
    CU_MEM_LOCATION_TYPE_DEVICE = 1
} CUmemLocationType;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;
} CUmemLocation;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

/* Interprocess memory handles: 64 opaque bytes, passed by value. */
typedef struct CUipcMemHandle_st {
    char reserved[64];
} CUipcMemHandle;
typedef struct cudaIpcMemHandle_st {
    char reserved[64];
} cudaIpcMemHandle_t;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NOT_FOUND 500
#define cudaSuccess 0
#define cudaErrorMemoryAllocation 2
#define cudaErrorInitializationError 3
#define cudaErrorCallRequiresNewerDriver 36
#define cudaErrorCallRequiresNewerDriverValue 36

/* cuGetProcAddress flags (CUdriverProcAddress_flags) */
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

#endif /* LW_CUDA_TYPES_FROM_TOOLKIT */

/* ---- driver function-pointer types (named after cuda.h's PFN_*_vNNNN) ---- */
typedef CUresult (*lw_pfn_cuGetProcAddress_v11030)(const char *symbol, void **pfn, int cudaVersion,
                                                   cuuint64_t flags);
typedef CUresult (*lw_pfn_cuGetProcAddress_v12000)(const char *symbol, void **pfn, int cudaVersion,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult *symbolStatus);
typedef CUresult (*lw_pfn_cuMemAlloc_v3020)(CUdeviceptr *dptr, size_t bytesize);
typedef CUresult (*lw_pfn_cuMemFree_v3020)(CUdeviceptr dptr);
typedef CUresult (*lw_pfn_cuMemAllocPitch_v3020)(CUdeviceptr *dptr, size_t *pPitch,
                                                 size_t WidthInBytes, size_t Height,
                                                 unsigned int ElementSizeBytes);
typedef CUresult (*lw_pfn_cuMemAllocManaged_v6000)(CUdeviceptr *dptr, size_t bytesize,
                                                   unsigned int flags);
typedef CUresult (*lw_pfn_cuMemAllocAsync_v11020)(CUdeviceptr *dptr, size_t bytesize,
                                                  CUstream hStream);
typedef CUresult (*lw_pfn_cuMemFreeAsync_v11020)(CUdeviceptr dptr, CUstream hStream);
typedef CUresult (*lw_pfn_cuMemAllocFromPoolAsync_v11020)(CUdeviceptr *dptr, size_t bytesize,
                                                          CUmemoryPool pool, CUstream hStream);
typedef CUresult (*lw_pfn_cuMemCreate_v10020)(CUmemGenericAllocationHandle *handle, size_t size,
                                              const CUmemAllocationProp *prop,
                                              unsigned long long flags);
typedef CUresult (*lw_pfn_cuMemRelease_v10020)(CUmemGenericAllocationHandle handle);
typedef CUresult (*lw_pfn_cuMemMap_v10020)(CUdeviceptr ptr, size_t size, size_t offset,
                                           CUmemGenericAllocationHandle handle,
                                           unsigned long long flags);
typedef CUresult (*lw_pfn_cuMemUnmap_v10020)(CUdeviceptr ptr, size_t size);
typedef CUresult (*lw_pfn_cuMemRetainAllocationHandle_v11000)(CUmemGenericAllocationHandle *handle,
                                                              void *addr);
typedef CUresult (*lw_pfn_cuMemHostAlloc_v2020)(void **pp, size_t bytesize, unsigned int Flags);
typedef CUresult (*lw_pfn_cuMemAllocHost_v3020)(void **pp, size_t bytesize);
typedef CUresult (*lw_pfn_cuMemFreeHost_v2000)(void *p);
typedef CUresult (*lw_pfn_cuMemHostRegister_v6050)(void *p, size_t bytesize, unsigned int Flags);
typedef CUresult (*lw_pfn_cuMemHostUnregister_v4000)(void *p);
typedef CUresult (*lw_pfn_cuIpcOpenMemHandle_v11000)(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                     unsigned int Flags);
typedef CUresult (*lw_pfn_cuIpcCloseMemHandle_v4010)(CUdeviceptr dptr);
typedef CUresult (*lw_pfn_cuMemImportFromShareableHandle_v10020)(
    CUmemGenericAllocationHandle *handle, void *osHandle, CUmemAllocationHandleType shHandleType);
typedef CUresult (*lw_pfn_cuMemGetAddressRange_v3020)(CUdeviceptr *pbase, size_t *psize,
                                                      CUdeviceptr dptr);
typedef CUresult (*lw_pfn_cuCtxGetDevice_v2000)(CUdevice *device);
typedef CUresult (*lw_pfn_cuMemGetInfo_v3020)(size_t *free, size_t *total);
typedef CUresult (*lw_pfn_cuCtxGetCurrent_v4000)(CUcontext *pctx);
typedef CUresult (*lw_pfn_cuDevicePrimaryCtxGetState_v7000)(CUdevice dev, unsigned int *flags,
                                                            int *active);
typedef CUresult (*lw_pfn_cuDevicePrimaryCtxRetain_v7000)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*lw_pfn_cuDevicePrimaryCtxRelease_v11000)(CUdevice dev);
typedef CUresult (*lw_pfn_cuCtxPushCurrent_v4000)(CUcontext ctx);
typedef CUresult (*lw_pfn_cuCtxPopCurrent_v4000)(CUcontext *pctx);
typedef CUresult (*lw_pfn_cuGetExportTable_v3000)(const void **ppExportTable,
                                                  const CUuuid *pExportTableId);

/* ---- runtime function types ---- */
typedef cudaError_t (*lw_rt_cudaMalloc)(void **devPtr, size_t size);
typedef cudaError_t (*lw_rt_cudaFree)(void *devPtr);
typedef cudaError_t (*lw_rt_cudaMallocAsync)(void **devPtr, size_t size, cudaStream_t hStream);
typedef cudaError_t (*lw_rt_cudaFreeAsync)(void *devPtr, cudaStream_t hStream);
typedef cudaError_t (*lw_rt_cudaMallocFromPoolAsync)(void **ptr, size_t size, cudaMemPool_t memPool,
                                                     cudaStream_t stream);
typedef cudaError_t (*lw_rt_cudaMallocManaged)(void **devPtr, size_t size, unsigned int flags);
typedef cudaError_t (*lw_rt_cudaMallocPitch)(void **devPtr, size_t *pitch, size_t width,
                                             size_t height);
typedef cudaError_t (*lw_rt_cudaMallocHost)(void **ptr, size_t size);
typedef cudaError_t (*lw_rt_cudaHostAlloc)(void **pHost, size_t size, unsigned int flags);
typedef cudaError_t (*lw_rt_cudaFreeHost)(void *ptr);
typedef cudaError_t (*lw_rt_cudaHostRegister)(void *ptr, size_t size, unsigned int flags);
typedef cudaError_t (*lw_rt_cudaHostUnregister)(void *ptr);
typedef cudaError_t (*lw_rt_cudaIpcOpenMemHandle)(void **devPtr, cudaIpcMemHandle_t handle,
                                                  unsigned int flags);
typedef cudaError_t (*lw_rt_cudaIpcCloseMemHandle)(void *devPtr);
typedef cudaError_t (*lw_rt_cudaGetDriverEntryPoint)(
    const char *symbol, void **funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus);
typedef cudaError_t (*lw_rt_cudaGetDriverEntryPointByVersion)(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *driverStatus);
typedef cudaError_t (*lw_rt_cudaRuntimeGetVersion)(int *runtimeVersion);

#ifndef LW_CUDA_TYPES_FROM_TOOLKIT
/* ---- more declarations (used by the CPU stand-ins in tests/stubs) ---- */
typedef unsigned int CUdeviceptr_v1; /* 32-bit pointers of the pre-3.2 (v1) entry points */

typedef enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} CUmemAccess_flags;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc;

typedef enum {
    CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

#define CUDA_ERROR_DEINITIALIZED 4
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_HANDLE 400
#define CUDA_ERROR_ALREADY_MAPPED 208
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1
#define cudaIpcMemLazyEnablePeerAccess 0x01
#define CUDA_ERROR_NOT_PERMITTED 800
#define CUDA_ERROR_NOT_SUPPORTED 801
#define CUDA_ERROR_UNKNOWN 999
#define cudaErrorInvalidValue 1
#define cudaErrorCudartUnloading 4
#define cudaErrorInsufficientDriver 35
#define cudaErrorNoDevice 100
#define cudaErrorInvalidDevice 101
#define cudaErrorDeviceUninitialized 201
#define cudaErrorInvalidResourceHandle 400
#define cudaErrorSymbolNotFound 500
#define cudaErrorNotPermitted 800
#define cudaErrorNotSupported 801
#define cudaErrorUnknown 999

/* cuMemHostAlloc / cudaHostAlloc flags, cuMemAllocManaged / cudaMallocManaged flags */
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEM_ATTACH_GLOBAL 0x1
#define CU_MEM_ATTACH_HOST 0x2
#define CU_MEM_ATTACH_SINGLE 0x4

#endif /* LW_CUDA_TYPES_FROM_TOOLKIT */

#endif
