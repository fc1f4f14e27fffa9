/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled only where a CUDA toolkit is installed (make check does it when
 * $CUDA_HOME or /usr/local/cuda has include/cuda.h): every function-pointer
 * type leakwatch declares in include/leakwatch/cuda_api.h is assigned to the
 * toolkit's own PFN_* type. A mismatched signature is an incompatible pointer
 * assignment, an error under -Werror. Nothing here runs. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#define LW_CUDA_TYPES_FROM_TOOLKIT
#include <leakwatch/cuda_api.h>

#define SAME(ours, theirs)                                                                         \
    static void check_##ours(ours p) {                                                             \
        theirs q = (theirs)0;                                                                      \
        q = p;                                                                                     \
        (void)q;                                                                                   \
    }

/* The scalar types and constants cuda_api.h declares on its own (int for the
 * result enums, unsigned long long for addresses and handles, the layout of
 * CUmemAllocationProp it reads location.type/id from) must match. */
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult");
_Static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t");
_Static_assert(sizeof(CUdevice) == sizeof(int), "CUdevice");
_Static_assert(sizeof(CUdeviceptr) == sizeof(unsigned long long), "CUdeviceptr");
_Static_assert(sizeof(cuuint64_t) == sizeof(unsigned long long), "cuuint64_t");
_Static_assert(sizeof(CUmemGenericAllocationHandle) == sizeof(unsigned long long), "handle");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp size");
_Static_assert(__builtin_offsetof(CUmemAllocationProp, location) == 8, "prop.location");
_Static_assert(__builtin_offsetof(CUmemAllocationProp, location.id) == 12, "location.id");
_Static_assert(CU_MEM_LOCATION_TYPE_DEVICE == 1, "location type device");
_Static_assert(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM == 2, "ptsz flag");
_Static_assert(CUDA_SUCCESS == 0 && CUDA_ERROR_OUT_OF_MEMORY == 2, "results");
_Static_assert(cudaErrorMemoryAllocation == 2 && cudaErrorInitializationError == 3, "errors");

SAME(lw_pfn_cuGetProcAddress_v11030, PFN_cuGetProcAddress_v11030)
SAME(lw_pfn_cuGetProcAddress_v12000, PFN_cuGetProcAddress_v12000)
SAME(lw_pfn_cuMemAlloc_v3020, PFN_cuMemAlloc_v3020)
SAME(lw_pfn_cuMemFree_v3020, PFN_cuMemFree_v3020)
SAME(lw_pfn_cuMemAllocPitch_v3020, PFN_cuMemAllocPitch_v3020)
SAME(lw_pfn_cuMemAllocManaged_v6000, PFN_cuMemAllocManaged_v6000)
SAME(lw_pfn_cuMemAllocAsync_v11020, PFN_cuMemAllocAsync_v11020)
SAME(lw_pfn_cuMemFreeAsync_v11020, PFN_cuMemFreeAsync_v11020)
SAME(lw_pfn_cuMemAllocFromPoolAsync_v11020, PFN_cuMemAllocFromPoolAsync_v11020)
SAME(lw_pfn_cuMemCreate_v10020, PFN_cuMemCreate_v10020)
SAME(lw_pfn_cuMemRelease_v10020, PFN_cuMemRelease_v10020)
SAME(lw_pfn_cuMemMap_v10020, PFN_cuMemMap_v10020)
SAME(lw_pfn_cuMemHostRegister_v6050, PFN_cuMemHostRegister_v6050)
SAME(lw_pfn_cuMemHostUnregister_v4000, PFN_cuMemHostUnregister_v4000)
SAME(lw_pfn_cuMemRetainAllocationHandle_v11000, PFN_cuMemRetainAllocationHandle_v11000)
SAME(lw_pfn_cuMemUnmap_v10020, PFN_cuMemUnmap_v10020)
SAME(lw_pfn_cuMemHostAlloc_v2020, PFN_cuMemHostAlloc_v2020)
SAME(lw_pfn_cuMemAllocHost_v3020, PFN_cuMemAllocHost_v3020)
SAME(lw_pfn_cuMemFreeHost_v2000, PFN_cuMemFreeHost_v2000)
SAME(lw_pfn_cuCtxGetDevice_v2000, PFN_cuCtxGetDevice_v2000)
SAME(lw_pfn_cuMemGetInfo_v3020, PFN_cuMemGetInfo_v3020)
SAME(lw_pfn_cuCtxGetCurrent_v4000, PFN_cuCtxGetCurrent_v4000)
SAME(lw_pfn_cuDevicePrimaryCtxGetState_v7000, PFN_cuDevicePrimaryCtxGetState_v7000)
SAME(lw_pfn_cuDevicePrimaryCtxRetain_v7000, PFN_cuDevicePrimaryCtxRetain_v7000)
SAME(lw_pfn_cuDevicePrimaryCtxRelease_v11000, PFN_cuDevicePrimaryCtxRelease_v11000)
SAME(lw_pfn_cuCtxPushCurrent_v4000, PFN_cuCtxPushCurrent_v4000)
SAME(lw_pfn_cuCtxPopCurrent_v4000, PFN_cuCtxPopCurrent_v4000)
SAME(lw_pfn_cuGetExportTable_v3000, PFN_cuGetExportTable_v3000)
SAME(lw_pfn_cuIpcOpenMemHandle_v11000, PFN_cuIpcOpenMemHandle_v11000)
SAME(lw_pfn_cuIpcCloseMemHandle_v4010, PFN_cuIpcCloseMemHandle_v4010)
SAME(lw_pfn_cuMemImportFromShareableHandle_v10020, PFN_cuMemImportFromShareableHandle_v10020)
SAME(lw_pfn_cuMemGetAddressRange_v3020, PFN_cuMemGetAddressRange_v3020)

/* Runtime functions: our types against the declarations themselves. */
#define SAME_RT(ours, fn)                                                                          \
    static void check_rt_##fn(void) {                                                              \
        ours p = fn;                                                                               \
        (void)p;                                                                                   \
    }
SAME_RT(lw_rt_cudaMalloc, cudaMalloc)
SAME_RT(lw_rt_cudaFree, cudaFree)
SAME_RT(lw_rt_cudaHostRegister, cudaHostRegister)
SAME_RT(lw_rt_cudaHostUnregister, cudaHostUnregister)
SAME_RT(lw_rt_cudaIpcOpenMemHandle, cudaIpcOpenMemHandle)
SAME_RT(lw_rt_cudaIpcCloseMemHandle, cudaIpcCloseMemHandle)
SAME_RT(lw_rt_cudaMallocAsync, cudaMallocAsync)
SAME_RT(lw_rt_cudaFreeAsync, cudaFreeAsync)
SAME_RT(lw_rt_cudaMallocFromPoolAsync, cudaMallocFromPoolAsync)
SAME_RT(lw_rt_cudaMallocManaged, cudaMallocManaged)
SAME_RT(lw_rt_cudaMallocPitch, cudaMallocPitch)
SAME_RT(lw_rt_cudaMallocHost, cudaMallocHost)
SAME_RT(lw_rt_cudaHostAlloc, cudaHostAlloc)
SAME_RT(lw_rt_cudaFreeHost, cudaFreeHost)
SAME_RT(lw_rt_cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion)
SAME_RT(lw_rt_cudaRuntimeGetVersion, cudaRuntimeGetVersion)

int lw_cuda_abi_check_unused;
