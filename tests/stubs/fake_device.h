/* SPDX-License-Identifier: Apache-2.0 */
/* The device the CPU stand-ins pretend to be: an H100-like GPU (compute
 * capability 9.0, 132 SMs, 2048 threads per SM, warps of 32). One table for
 * the driver's cuDeviceGetAttribute and the runtime's cudaDeviceGetAttribute /
 * cudaGetDeviceProperties, so that they agree. CUdevice_attribute and
 * cudaDeviceAttr number the attributes the same way. */
#ifndef LW_FAKE_DEVICE_H
#define LW_FAKE_DEVICE_H

#include <stdbool.h>

#define FAKE_DEV_NAME "leakwatch stand-in H100 (CPU)"
#define FAKE_DEV_MAJOR 9
#define FAKE_DEV_MINOR 0
#define FAKE_DEV_SMS 132
#define FAKE_DEV_THREADS_PER_SM 2048
#define FAKE_DEV_WARP 32
#define FAKE_DEV_L2 (50 * 1024 * 1024)
#define FAKE_DEV_SMEM_BLOCK 49152
#define FAKE_DEV_SMEM_BLOCK_OPTIN 232448
#define FAKE_DEV_SMEM_SM 233472
#define FAKE_DEV_ATTR_MAX 140 /* attributes above this are invalid */

/* The value of attribute attr (cudaDevAttr* / CU_DEVICE_ATTRIBUTE_*), or
 * false for a number that names no attribute. Unlisted attributes are 0. */
static inline bool fake_device_attribute(int attr, int dev, int *value) {
    int v = 0;
    switch (attr) {
    case 1: /* MaxThreadsPerBlock */
    case 2: /* MaxBlockDimX */
    case 3: /* MaxBlockDimY */
        v = 1024;
        break;
    case 4: /* MaxBlockDimZ */
        v = 64;
        break;
    case 5: /* MaxGridDimX */
        v = 2147483647;
        break;
    case 6: /* MaxGridDimY */
    case 7: /* MaxGridDimZ */
        v = 65535;
        break;
    case 8: /* MaxSharedMemoryPerBlock */
        v = FAKE_DEV_SMEM_BLOCK;
        break;
    case 9: /* TotalConstantMemory */
        v = 65536;
        break;
    case 10: /* WarpSize */
        v = FAKE_DEV_WARP;
        break;
    case 11: /* MaxPitch */
        v = 2147483647;
        break;
    case 12: /* MaxRegistersPerBlock */
    case 82: /* MaxRegistersPerMultiprocessor */
        v = 65536;
        break;
    case 13: /* ClockRate, kHz */
        v = 1980000;
        break;
    case 14: /* TextureAlignment */
    case 30: /* SurfaceAlignment */
        v = 512;
        break;
    case 16: /* MultiProcessorCount */
        v = FAKE_DEV_SMS;
        break;
    case 33: /* PciBusId */
        v = dev + 1;
        break;
    case 36: /* MemoryClockRate, kHz */
        v = 2619000;
        break;
    case 37: /* GlobalMemoryBusWidth */
        v = 5120;
        break;
    case 38: /* L2CacheSize */
        v = FAKE_DEV_L2;
        break;
    case 39: /* MaxThreadsPerMultiProcessor */
        v = FAKE_DEV_THREADS_PER_SM;
        break;
    case 40: /* AsyncEngineCount */
        v = 3;
        break;
    case 75: /* ComputeCapabilityMajor */
        v = FAKE_DEV_MAJOR;
        break;
    case 76: /* ComputeCapabilityMinor */
        v = FAKE_DEV_MINOR;
        break;
    case 81: /* MaxSharedMemoryPerMultiprocessor */
        v = FAKE_DEV_SMEM_SM;
        break;
    case 87: /* SingleToDoublePrecisionPerfRatio */
        v = 2;
        break;
    case 97: /* MaxSharedMemoryPerBlockOptin */
        v = FAKE_DEV_SMEM_BLOCK_OPTIN;
        break;
    case 106: /* MaxBlocksPerMultiprocessor */
        v = 32;
        break;
    case 107: /* MaxPersistingL2CacheSize */
        v = 32505856;
        break;
    case 108: /* MaxAccessPolicyWindowSize */
        v = 134213632;
        break;
    case 111: /* ReservedSharedMemoryPerBlock */
        v = 1024;
        break;
    case 119: /* MemoryPoolSupportedHandleTypes: POSIX file descriptors */
        v = 1;
        break;
    /* Supported features: 1. */
    case 15:  /* GpuOverlap */
    case 19:  /* CanMapHostMemory */
    case 31:  /* ConcurrentKernels */
    case 32:  /* EccEnabled */
    case 41:  /* UnifiedAddressing */
    case 78:  /* StreamPrioritiesSupported */
    case 79:  /* GlobalL1CacheSupported */
    case 80:  /* LocalL1CacheSupported */
    case 83:  /* ManagedMemory */
    case 89:  /* ConcurrentManagedAccess */
    case 90:  /* ComputePreemptionSupported */
    case 91:  /* CanUseHostPointerForRegisteredMem */
    case 92:  /* CanUseStreamMemOps (CUDA 11: stream wait/write value) */
    case 95:  /* CooperativeLaunch */
    case 99:  /* HostRegisterSupported */
    case 102: /* VirtualMemoryManagementSupported */
    case 103: /* HandleTypePosixFileDescriptorSupported */
    case 113: /* HostRegisterReadOnlySupported */
    case 114: /* TimelineSemaphoreInteropSupported */
    case 115: /* MemoryPoolsSupported */
    case 120: /* ClusterLaunch */
    case 121: /* DeferredMappingCudaArraySupported */
        v = 1;
        break;
    default:
        if (attr < 1 || attr > FAKE_DEV_ATTR_MAX) return false;
        break;
    }
    *value = v;
    return true;
}

#endif
