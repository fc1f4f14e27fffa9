/* SPDX-License-Identifier: Apache-2.0 */
/* The stand-in driver's second half (tests only): the entry points that real
 * clients need besides the memory and context model of fake_cuda.c. Linked
 * into every variant of build/tests/lib/libcuda.so.1 (Makefile: FAKE_CUDA_SRCS).
 *
 * Who needs what:
 *   - numba 0.61's ctypes binding (numba/cuda/cudadrv/driver.py) looks every
 *     function up by name with dlsym, the "_v2" name first, then the plain one,
 *     and fails at the first call of one that is missing;
 *   - PyCUDA 2025.1's _driver extension links about 160 driver symbols
 *     directly (and libcurand.so.10: a generated stand-in, tests/stubs/cuda12), so each must exist
 *     for the module to load at all.
 *
 * What is modelled:
 *   - one kind of device, an H100 SXM-like one (compute capability 9.0, 132
 *     SMs, the memory of FAKE_CUDA_MEM_BYTES, 80 GiB by default): every
 *     CU_DEVICE_ATTRIBUTE_* of CUDA 12.x/13.0, name, UUID, PCI bus id;
 *   - copies and memsets that really copy and set. Device memory is the
 *     PROT_NONE reservation of fake_cuda.c: the pages a copy or memset touches
 *     are made readable and writable then (and stay so; freed pages keep their
 *     contents, as on a GPU). Device allocations nothing copies to cost
 *     nothing, so tests can still "allocate" many GiB;
 *   - streams, events (with real elapsed times), cuCtxCreate/Destroy (which
 *     hand out the device's primary context: one context per device here),
 *     peer access, limits, cache configs;
 *   - modules and kernels: any image loads, any function name is found, and
 *     launches succeed and do nothing (numba's @cuda.jit needs NVIDIA's NVVM
 *     before it gets here, PyCUDA's SourceModule needs nvcc); module globals
 *     are never found (they would be device memory no hook sees);
 *   - arrays, textures, surfaces, the linker, OpenGL interop and IPC events:
 *     CUDA_ERROR_NOT_SUPPORTED (or CUDA_ERROR_INVALID_HANDLE for a handle
 *     that cannot exist), so nothing here allocates device memory: every
 *     allocation and free still goes through fake_cuda.c's entry points,
 *     which leakwatch wraps.
 * Not modelled: cuCtxDestroy and cuDevicePrimaryCtxReset do not free the
 * context's allocations (the real driver does); managed memory is not
 * accessible from the host. These functions are not reachable through
 * cuGetProcAddress (its table, in fake_cuda.c, lists what the stand-in
 * runtimes and leakwatch's hooks look up); clients that use dlsym or link
 * the symbols find them. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "fake_common.h"
#include "fake_cuda_internal.h"

/* ---- types of cuda.h not in leakwatch/cuda_api.h ---- */

typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUarray_st *CUarray;
typedef struct CUtexref_st *CUtexref;
typedef struct CUsurfref_st *CUsurfref;
typedef struct CUgraphicsResource_st *CUgraphicsResource;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUipcEventHandle_st {
    char reserved[64];
} CUipcEventHandle;
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
typedef size_t (*CUoccupancyB2DSize)(int blockSize);
typedef unsigned int GLuint;
typedef unsigned int GLenum;

typedef enum {
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_MEMORYTYPE_ARRAY = 3,
    CU_MEMORYTYPE_UNIFIED = 4
} CUmemorytype;

typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes, srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

/* Opaque here: 3D copies and array descriptors are refused. */
typedef struct CUDA_MEMCPY3D_st CUDA_MEMCPY3D;
typedef struct CUDA_MEMCPY3D_PEER_st CUDA_MEMCPY3D_PEER;
typedef struct CUDA_ARRAY_DESCRIPTOR_st CUDA_ARRAY_DESCRIPTOR;
typedef struct CUDA_ARRAY3D_DESCRIPTOR_st CUDA_ARRAY3D_DESCRIPTOR;

#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_ARRAY_IS_MAPPED 207
#define CUDA_ERROR_PEER_ACCESS_UNSUPPORTED 217
#define CUDA_ERROR_INVALID_PTX 218
#define CUDA_ERROR_FILE_NOT_FOUND 301
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED 704
#define CUDA_ERROR_PEER_ACCESS_NOT_ENABLED 705
#define CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE 708
#define CUDA_ERROR_CONTEXT_IS_DESTROYED 709
#define CUDA_ERROR_LAUNCH_FAILED 719

#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* ---- handles: streams, events, modules, functions ----
 * Every live handle is in one table, so that a stale or foreign handle is
 * refused without being dereferenced. */

enum obj_kind { OBJ_STREAM = 1, OBJ_EVENT, OBJ_MODULE, OBJ_FUNCTION };

struct obj {
    void *key; /* the handle: this object's own address */
    enum obj_kind kind;
    int dev;
    unsigned flags;
    int priority;
    bool recorded; /* events */
    struct timespec when;
    struct obj *module; /* functions: their module */
    UT_hash_handle hh;
};

static pthread_mutex_t obj_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *objs;

static struct obj *obj_new(enum obj_kind kind, int dev) {
    struct obj *o = calloc(1, sizeof *o);
    if (o == NULL) return NULL;
    o->key = o;
    o->kind = kind;
    o->dev = dev;
    pthread_mutex_lock(&obj_lock);
    HASH_ADD_PTR(objs, key, o);
    pthread_mutex_unlock(&obj_lock);
    return o;
}

/* The live object of this kind at handle h; obj_lock held by the caller. */
static struct obj *obj_find_locked(const void *h, enum obj_kind kind) {
    struct obj *o = NULL;
    if (h == NULL) return NULL;
    HASH_FIND_PTR(objs, &h, o);
    return o != NULL && o->kind == kind ? o : NULL;
}

static bool obj_live(const void *h, enum obj_kind kind) {
    pthread_mutex_lock(&obj_lock);
    bool live = obj_find_locked(h, kind) != NULL;
    pthread_mutex_unlock(&obj_lock);
    return live;
}

/* Removes and frees the object, and for a module its functions. */
static bool obj_delete(const void *h, enum obj_kind kind) {
    pthread_mutex_lock(&obj_lock);
    struct obj *o = obj_find_locked(h, kind), *f, *tmp;
    if (o != NULL) {
        HASH_DEL(objs, o);
        if (kind == OBJ_MODULE) {
            HASH_ITER(hh, objs, f, tmp) {
                /* cppcheck-suppress uninitvar ; HASH_ITER sets f */
                if (f->kind == OBJ_FUNCTION && f->module == o) {
                    HASH_DEL(objs, f);
                    free(f);
                }
            }
        }
        free(o);
    }
    pthread_mutex_unlock(&obj_lock);
    return o != NULL;
}

/* Streams: 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a live stream. */
static bool valid_stream(CUstream s) {
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
           obj_live(s, OBJ_STREAM);
}

/* ---- device memory as host memory ---- */

static uintptr_t page_size(void) {
    static uintptr_t ps;
    if (ps == 0) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (uintptr_t)v : 4096;
    }
    return ps;
}

/* The host address at which the n bytes at device (or host) address a can be
 * read and written. Device pages are made accessible on first use.
 * unknown_is_host: an address no allocation holds is host memory (the unified
 * copies: cuMemcpy, cuMemcpyAsync, 2D copies of CU_MEMORYTYPE_UNIFIED). */
static CUresult host_view(CUdeviceptr a, size_t n, bool unknown_is_host, void **out) {
    *out = (void *)(uintptr_t)a;
    if (n == 0) return CUDA_SUCCESS;
    struct fake_range r;
    if (!fake_cuda_find_range((uintptr_t)a, &r)) {
        return unknown_is_host && a != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    if (n > r.size - ((uintptr_t)a - r.base)) return CUDA_ERROR_INVALID_VALUE;
    if (r.kind == FAKE_RANGE_DEVICE || r.kind == FAKE_RANGE_MAPPED) {
        uintptr_t ps = page_size();
        uintptr_t lo = (uintptr_t)a & ~(ps - 1);
        uintptr_t hi = ((uintptr_t)a + n + ps - 1) & ~(ps - 1);
        /* Fails only where fake_cuda.c could not reserve its range
         * (FAKE_CUDA_NO_RESERVE=1): the address is then a plain number. */
        if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

static CUresult copy(CUdeviceptr dst, bool dst_host_ok, CUdeviceptr src, bool src_host_ok,
                     size_t n) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    void *d, *s;
    if ((r = host_view(dst, n, dst_host_ok, &d)) != CUDA_SUCCESS) return r;
    if ((r = host_view(src, n, src_host_ok, &s)) != CUDA_SUCCESS) return r;
    if (n != 0) memmove(d, s, n);
    return CUDA_SUCCESS;
}

static CUresult copy_htod(CUdeviceptr dst, const void *src, size_t n) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (src == NULL && n != 0) return CUDA_ERROR_INVALID_VALUE;
    void *d;
    if ((r = host_view(dst, n, false, &d)) != CUDA_SUCCESS) return r;
    if (n != 0) memmove(d, src, n);
    return CUDA_SUCCESS;
}

static CUresult copy_dtoh(void *dst, CUdeviceptr src, size_t n) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (dst == NULL && n != 0) return CUDA_ERROR_INVALID_VALUE;
    void *s;
    if ((r = host_view(src, n, false, &s)) != CUDA_SUCCESS) return r;
    if (n != 0) memmove(dst, s, n);
    return CUDA_SUCCESS;
}

/* N elements of `size` bytes (1, 2 or 4) set to value, in rows of width
 * elements `pitch` bytes apart (height 1: a plain memset). */
static CUresult set2d(CUdeviceptr dst, size_t pitch, unsigned value, size_t size, size_t width,
                      size_t height) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    if ((size > 1 && dst % size != 0) || width > SIZE_MAX / size) return CUDA_ERROR_INVALID_VALUE;
    size_t row = width * size;
    if (height > 1 && (pitch < row || height - 1 > (SIZE_MAX - row) / pitch))
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = height > 1 ? (height - 1) * pitch + row : row;
    void *d;
    if ((r = host_view(dst, span, false, &d)) != CUDA_SUCCESS) return r;
    for (size_t y = 0; y < height; y++) {
        unsigned char *p = (unsigned char *)d + y * pitch;
        if (size == 1) {
            memset(p, (int)(value & 0xff), row);
        } else if (size == 2) {
            uint16_t v = (uint16_t)value;
            for (size_t i = 0; i < width; i++)
                memcpy(p + 2 * i, &v, 2);
        } else {
            uint32_t v = value;
            for (size_t i = 0; i < width; i++)
                memcpy(p + 4 * i, &v, 4);
        }
    }
    return CUDA_SUCCESS;
}

/* A 2D copy between host, device and unified memory (arrays are refused). */
static CUresult copy2d(const CUDA_MEMCPY2D *c) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (c == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (c->srcMemoryType == CU_MEMORYTYPE_ARRAY || c->dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (c->WidthInBytes == 0 || c->Height == 0) return CUDA_SUCCESS;
    size_t w = c->WidthInBytes, h = c->Height;
    if ((h > 1 && (c->srcPitch < c->srcXInBytes + w || c->dstPitch < c->dstXInBytes + w)))
        return CUDA_ERROR_INVALID_VALUE;
    /* The first byte of each side, and the bytes from there to the last row's end. */
    uintptr_t s0, d0;
    size_t sspan = (h - 1) * c->srcPitch + w, dspan = (h - 1) * c->dstPitch + w;
    void *sp, *dp;
    switch (c->srcMemoryType) {
    case CU_MEMORYTYPE_HOST:
        s0 = (uintptr_t)c->srcHost + c->srcY * c->srcPitch + c->srcXInBytes;
        sp = (void *)s0;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        s0 = (uintptr_t)c->srcDevice + c->srcY * c->srcPitch + c->srcXInBytes;
        r = host_view(s0, sspan, c->srcMemoryType == CU_MEMORYTYPE_UNIFIED, &sp);
        if (r != CUDA_SUCCESS) return r;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    switch (c->dstMemoryType) {
    case CU_MEMORYTYPE_HOST:
        d0 = (uintptr_t)c->dstHost + c->dstY * c->dstPitch + c->dstXInBytes;
        dp = (void *)d0;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        d0 = (uintptr_t)c->dstDevice + c->dstY * c->dstPitch + c->dstXInBytes;
        r = host_view(d0, dspan, c->dstMemoryType == CU_MEMORYTYPE_UNIFIED, &dp);
        if (r != CUDA_SUCCESS) return r;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (sp == NULL || dp == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (size_t y = 0; y < h; y++)
        memmove((char *)dp + y * c->dstPitch, (const char *)sp + y * c->srcPitch, w);
    return CUDA_SUCCESS;
}

/* ---- the device: an H100 SXM5 80GB ---- */

#define FAKE_DEVICE_NAME "NVIDIA H100 80GB HBM3"
#define FAKE_SM_COUNT 132
/* The highest CUdevice_attribute value known (CUDA 13.0's cuda.h goes up to
 * CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED and a few more); above
 * it, CUDA_ERROR_INVALID_VALUE, as the real driver answers. */
#define FAKE_ATTR_MAX 145

/* CU_DEVICE_ATTRIBUTE_* values of an H100 SXM5 (deviceQuery's numbers);
 * 0 where the attribute is off, deprecated or unknown. */
static const int device_attrs[FAKE_ATTR_MAX + 1] = {
    [1] = 1024,           /* MAX_THREADS_PER_BLOCK */
    [2] = 1024,           /* MAX_BLOCK_DIM_X */
    [3] = 1024,           /* MAX_BLOCK_DIM_Y */
    [4] = 64,             /* MAX_BLOCK_DIM_Z */
    [5] = 2147483647,     /* MAX_GRID_DIM_X */
    [6] = 65535,          /* MAX_GRID_DIM_Y */
    [7] = 65535,          /* MAX_GRID_DIM_Z */
    [8] = 49152,          /* MAX_SHARED_MEMORY_PER_BLOCK */
    [9] = 65536,          /* TOTAL_CONSTANT_MEMORY */
    [10] = 32,            /* WARP_SIZE */
    [11] = 2147483647,    /* MAX_PITCH */
    [12] = 65536,         /* MAX_REGISTERS_PER_BLOCK */
    [13] = 1980000,       /* CLOCK_RATE, kHz */
    [14] = 512,           /* TEXTURE_ALIGNMENT */
    [15] = 1,             /* GPU_OVERLAP */
    [16] = FAKE_SM_COUNT, /* MULTIPROCESSOR_COUNT */
    [17] = 0,             /* KERNEL_EXEC_TIMEOUT */
    [18] = 0,             /* INTEGRATED */
    [19] = 1,             /* CAN_MAP_HOST_MEMORY */
    [20] = 0,             /* COMPUTE_MODE: default */
    [21] = 131072,        /* MAXIMUM_TEXTURE1D_WIDTH */
    [22] = 131072,        /* MAXIMUM_TEXTURE2D_WIDTH */
    [23] = 65536,         /* MAXIMUM_TEXTURE2D_HEIGHT */
    [24] = 16384,         /* MAXIMUM_TEXTURE3D_WIDTH */
    [25] = 16384,         /* MAXIMUM_TEXTURE3D_HEIGHT */
    [26] = 16384,         /* MAXIMUM_TEXTURE3D_DEPTH */
    [27] = 32768,         /* MAXIMUM_TEXTURE2D_LAYERED_WIDTH */
    [28] = 32768,         /* MAXIMUM_TEXTURE2D_LAYERED_HEIGHT */
    [29] = 2048,          /* MAXIMUM_TEXTURE2D_LAYERED_LAYERS */
    [30] = 512,           /* SURFACE_ALIGNMENT */
    [31] = 1,             /* CONCURRENT_KERNELS */
    [32] = 1,             /* ECC_ENABLED */
    [33] = 0,             /* PCI_BUS_ID: per device, below */
    [34] = 0,             /* PCI_DEVICE_ID */
    [35] = 0,             /* TCC_DRIVER */
    [36] = 2619000,       /* MEMORY_CLOCK_RATE, kHz */
    [37] = 5120,          /* GLOBAL_MEMORY_BUS_WIDTH */
    [38] = 52428800,      /* L2_CACHE_SIZE */
    [39] = 2048,          /* MAX_THREADS_PER_MULTIPROCESSOR */
    [40] = 3,             /* ASYNC_ENGINE_COUNT */
    [41] = 1,             /* UNIFIED_ADDRESSING */
    [42] = 32768,         /* MAXIMUM_TEXTURE1D_LAYERED_WIDTH */
    [43] = 2048,          /* MAXIMUM_TEXTURE1D_LAYERED_LAYERS */
    [44] = 0,             /* CAN_TEX2D_GATHER (deprecated) */
    [45] = 32768,         /* MAXIMUM_TEXTURE2D_GATHER_WIDTH */
    [46] = 32768,         /* MAXIMUM_TEXTURE2D_GATHER_HEIGHT */
    [47] = 8192,          /* MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE */
    [48] = 8192,          /* MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE */
    [49] = 32768,         /* MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE */
    [50] = 0,             /* PCI_DOMAIN_ID */
    [51] = 32,            /* TEXTURE_PITCH_ALIGNMENT */
    [52] = 32768,         /* MAXIMUM_TEXTURECUBEMAP_WIDTH */
    [53] = 32768,         /* MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH */
    [54] = 2046,          /* MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS */
    [55] = 32768,         /* MAXIMUM_SURFACE1D_WIDTH */
    [56] = 131072,        /* MAXIMUM_SURFACE2D_WIDTH */
    [57] = 65536,         /* MAXIMUM_SURFACE2D_HEIGHT */
    [58] = 16384,         /* MAXIMUM_SURFACE3D_WIDTH */
    [59] = 16384,         /* MAXIMUM_SURFACE3D_HEIGHT */
    [60] = 16384,         /* MAXIMUM_SURFACE3D_DEPTH */
    [61] = 32768,         /* MAXIMUM_SURFACE1D_LAYERED_WIDTH */
    [62] = 2048,          /* MAXIMUM_SURFACE1D_LAYERED_LAYERS */
    [63] = 32768,         /* MAXIMUM_SURFACE2D_LAYERED_WIDTH */
    [64] = 32768,         /* MAXIMUM_SURFACE2D_LAYERED_HEIGHT */
    [65] = 2048,          /* MAXIMUM_SURFACE2D_LAYERED_LAYERS */
    [66] = 32768,         /* MAXIMUM_SURFACECUBEMAP_WIDTH */
    [67] = 32768,         /* MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH */
    [68] = 2046,          /* MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS */
    [69] = 268435456,     /* MAXIMUM_TEXTURE1D_LINEAR_WIDTH (deprecated) */
    [70] = 131072,        /* MAXIMUM_TEXTURE2D_LINEAR_WIDTH */
    [71] = 65000,         /* MAXIMUM_TEXTURE2D_LINEAR_HEIGHT */
    [72] = 2097120,       /* MAXIMUM_TEXTURE2D_LINEAR_PITCH */
    [73] = 32768,         /* MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH */
    [74] = 32768,         /* MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT */
    [75] = 9,             /* COMPUTE_CAPABILITY_MAJOR */
    [76] = 0,             /* COMPUTE_CAPABILITY_MINOR */
    [77] = 32768,         /* MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH */
    [78] = 1,             /* STREAM_PRIORITIES_SUPPORTED */
    [79] = 1,             /* GLOBAL_L1_CACHE_SUPPORTED */
    [80] = 1,             /* LOCAL_L1_CACHE_SUPPORTED */
    [81] = 233472,        /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
    [82] = 65536,         /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    [83] = 1,             /* MANAGED_MEMORY */
    [84] = 0,             /* MULTI_GPU_BOARD */
    [85] = 0,             /* MULTI_GPU_BOARD_GROUP_ID: per device, below */
    [86] = 0,             /* HOST_NATIVE_ATOMIC_SUPPORTED */
    [87] = 2,             /* SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO */
    [88] = 0,             /* PAGEABLE_MEMORY_ACCESS */
    [89] = 1,             /* CONCURRENT_MANAGED_ACCESS */
    [90] = 1,             /* COMPUTE_PREEMPTION_SUPPORTED */
    [91] = 1,             /* CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM */
    [92] = 0,             /* CAN_USE_STREAM_MEM_OPS_V1 */
    [93] = 0,             /* CAN_USE_64_BIT_STREAM_MEM_OPS_V1 */
    [94] = 0,             /* CAN_USE_STREAM_WAIT_VALUE_NOR_V1 */
    [95] = 1,             /* COOPERATIVE_LAUNCH */
    [96] = 0,             /* COOPERATIVE_MULTI_DEVICE_LAUNCH (deprecated) */
    [97] = 232448,        /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
    [98] = 0,             /* CAN_FLUSH_REMOTE_WRITES */
    [99] = 1,             /* HOST_REGISTER_SUPPORTED */
    [100] = 0,            /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES */
    [101] = 0,            /* DIRECT_MANAGED_MEM_ACCESS_FROM_HOST */
    [102] = 1,            /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    [103] = 1,            /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
    [104] = 0,            /* HANDLE_TYPE_WIN32_HANDLE_SUPPORTED */
    [105] = 0,            /* HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED */
    [106] = 32,           /* MAX_BLOCKS_PER_MULTIPROCESSOR */
    [107] = 1,            /* GENERIC_COMPRESSION_SUPPORTED */
    [108] = 82837504,     /* MAX_PERSISTING_L2_CACHE_SIZE */
    [109] = 134213632,    /* MAX_ACCESS_POLICY_WINDOW_SIZE */
    [110] = 1,            /* GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED */
    [111] = 1024,         /* RESERVED_SHARED_MEMORY_PER_BLOCK */
    [112] = 1,            /* SPARSE_CUDA_ARRAY_SUPPORTED */
    [113] = 1,            /* READ_ONLY_HOST_REGISTER_SUPPORTED */
    [114] = 1,            /* TIMELINE_SEMAPHORE_INTEROP_SUPPORTED */
    [115] = 1,            /* MEMORY_POOLS_SUPPORTED */
    [116] = 0,            /* GPU_DIRECT_RDMA_SUPPORTED */
    [117] = 0,            /* GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS */
    [118] = 0,            /* GPU_DIRECT_RDMA_WRITES_ORDERING */
    [119] = 1,            /* MEMPOOL_SUPPORTED_HANDLE_TYPES: POSIX file descriptor */
    [120] = 1,            /* CLUSTER_LAUNCH */
    [121] = 1,            /* DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED */
    [122] = 1,            /* CAN_USE_64_BIT_STREAM_MEM_OPS */
    [123] = 1,            /* CAN_USE_STREAM_WAIT_VALUE_NOR */
    [124] = 1,            /* DMA_BUF_SUPPORTED */
    [125] = 1,            /* IPC_EVENT_SUPPORTED */
    [126] = 4,            /* MEM_SYNC_DOMAIN_COUNT */
    [127] = 1,            /* TENSOR_MAP_ACCESS_SUPPORTED */
    [128] = 0,            /* HANDLE_TYPE_FABRIC_SUPPORTED */
    [129] = 1,            /* UNIFIED_FUNCTION_POINTERS */
    [130] = 0,            /* NUMA_CONFIG: none */
    [131] = -1,           /* NUMA_ID */
    [132] = 0,            /* MULTICAST_SUPPORTED */
    [133] = 0,            /* MPS_ENABLED */
    [134] = 0,            /* HOST_NUMA_ID */
};

static CUresult need_device(CUdevice dev) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return dev >= 0 && dev < fake_cuda_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* PCI bus of device d: 0x18, 0x2a, 0x3a, ... as on a DGX H100; enough for 64. */
static int pci_bus(CUdevice dev) {
    return 0x18 + 0x10 * dev + (dev > 0 ? 2 : 0);
}

CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (pi == NULL || attrib < 1 || attrib > FAKE_ATTR_MAX) return CUDA_ERROR_INVALID_VALUE;
    if (attrib == 33)
        *pi = pci_bus(dev);
    else if (attrib == 85)
        *pi = dev;
    else
        *pi = device_attrs[attrib];
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", FAKE_DEVICE_NAME);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
    /* A fixed, recognisable UUID per device ("leakwatch" + the ordinal). */
    static const char base[16] = {0x6c, 0x65, 0x61, 0x6b, 0x77, 0x61, 0x74, 0x63,
                                  0x68, 0x2d, 0x48, 0x31, 0x30, 0x30, 0x00, 0x00};
    memcpy(uuid->bytes, base, 16);
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
    return cuDeviceGetUuid(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
    *bytes = fake_cuda_mem_limit();
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
    size_t t = fake_cuda_mem_limit();
    *bytes = t > UINT32_MAX ? UINT32_MAX : (unsigned int)t;
    return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (major == NULL || minor == NULL) return CUDA_ERROR_INVALID_VALUE;
    *major = device_attrs[75];
    *minor = device_attrs[76];
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (pciBusId == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "%08X:%02X:00.0", 0, pci_bus(dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (dev == NULL || pciBusId == NULL) return CUDA_ERROR_INVALID_VALUE;
    unsigned domain = 0, bus = 0, device = 0;
    /* [domain]:bus:device[.function], hexadecimal */
    if (sscanf(pciBusId, "%x:%x:%x", &domain, &bus, &device) != 3) {
        domain = 0;
        if (sscanf(pciBusId, "%x:%x", &bus, &device) != 2) return CUDA_ERROR_INVALID_VALUE;
    }
    for (int d = 0; d < fake_cuda_device_count(); d++) {
        if (domain == 0 && bus == (unsigned)pci_bus(d) && device == 0) {
            *dev = d;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev) {
    CUresult r = need_device(dev);
    if (r == CUDA_SUCCESS) r = need_device(peerDev);
    if (r != CUDA_SUCCESS) return r;
    if (canAccessPeer == NULL) return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev; /* NVLink between every pair, as in a DGX */
    return CUDA_SUCCESS;
}

/* The primary context's flags are not modelled (cuDevicePrimaryCtxGetState
 * reports 0); reset keeps the context's allocations (see the file comment). */
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    return flags > 0x1f ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
    return need_device(dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
    return need_device(dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
    return fake_cuda_primary_release(dev);
}

/* ---- contexts ----
 * One context per device: cuCtxCreate hands out the device's primary context
 * (with a reference on it) and makes it current by pushing it, as the real one
 * does with the new context. */

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    CUresult r = need_device(dev);
    if (r != CUDA_SUCCESS) return r;
    if (pctx == NULL || flags > 0x1f) return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    r = fake_cuda_primary_retain(&ctx, dev);
    if (r != CUDA_SUCCESS) return r;
    r = fake_cuda_ctx_push(ctx);
    if (r != CUDA_SUCCESS) {
        fake_cuda_primary_release(dev);
        return r;
    }
    *pctx = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) {
    return cuCtxCreate_v2(pctx, flags, dev);
}

/* Drops the reference cuCtxCreate took; if the context is the calling
 * thread's current one, it is popped off the stack. */
CUresult cuCtxDestroy_v2(CUcontext ctx) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    int dev;
    if (!fake_cuda_ctx_device(ctx, &dev)) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext cur = NULL;
    fake_cuda_ctx_get_current(&cur);
    if (cur == ctx) fake_cuda_ctx_pop(NULL);
    fake_cuda_primary_release(dev); /* fails harmlessly when no reference is left */
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) {
    return cuCtxDestroy_v2(ctx);
}

/* The CUDA 1.0 reference counting (PyCUDA still links it). */
CUresult cuCtxAttach(CUcontext *pctx, unsigned int flags) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pctx == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    r = fake_cuda_primary_retain(&ctx, dev);
    if (r == CUDA_SUCCESS) *pctx = ctx;
    return r;
}

CUresult cuCtxDetach(CUcontext ctx) {
    return cuCtxDestroy_v2(ctx);
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    int dev;
    if (ctx == NULL) {
        r = fake_cuda_need_ctx(&dev);
        if (r != CUDA_SUCCESS) return r;
    } else if (!fake_cuda_ctx_device(ctx, &dev)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
    *version = 3020; /* what the real driver reports for every context made since CUDA 3.2 */
    return CUDA_SUCCESS;
}

/* Per-process settings (one context per device, and tests use one device). */
static pthread_mutex_t setting_lock = PTHREAD_MUTEX_INITIALIZER;
static int cache_config;
static int shared_config = 1; /* CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE */
#define N_LIMITS 7
static size_t limits[N_LIMITS] = {
    1024,    /* CU_LIMIT_STACK_SIZE */
    1048576, /* CU_LIMIT_PRINTF_FIFO_SIZE */
    8388608, /* CU_LIMIT_MALLOC_HEAP_SIZE */
    2,       /* CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH */
    2048,    /* CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT */
    64,      /* CU_LIMIT_MAX_L2_FETCH_GRANULARITY */
    0,       /* CU_LIMIT_PERSISTING_L2_CACHE_SIZE */
};

static CUresult get_setting(int *where, int *out) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&setting_lock);
    *out = *where;
    pthread_mutex_unlock(&setting_lock);
    return CUDA_SUCCESS;
}

static CUresult set_setting(int *where, int value, int max) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (value < 0 || value > max) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&setting_lock);
    *where = value;
    pthread_mutex_unlock(&setting_lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCacheConfig(int *pconfig) {
    return get_setting(&cache_config, pconfig);
}

CUresult cuCtxSetCacheConfig(int config) {
    return set_setting(&cache_config, config, 3);
}

CUresult cuCtxGetSharedMemConfig(int *pConfig) {
    return get_setting(&shared_config, pConfig);
}

CUresult cuCtxSetSharedMemConfig(int config) {
    return set_setting(&shared_config, config, 2);
}

CUresult cuCtxGetLimit(size_t *pvalue, int limit) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pvalue == NULL || limit < 0 || limit >= N_LIMITS) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&setting_lock);
    *pvalue = limits[limit];
    pthread_mutex_unlock(&setting_lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(int limit, size_t value) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (limit < 0 || limit >= N_LIMITS) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&setting_lock);
    limits[limit] = value;
    pthread_mutex_unlock(&setting_lock);
    return CUDA_SUCCESS;
}

/* Peer access enabled from device a to device b: peer[a] bit b. */
static uint64_t peer_enabled[FAKE_MAX_DEVICES];

static CUresult peer_access(CUcontext peer, unsigned int flags, bool enable) {
    int dev, peer_dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (!fake_cuda_ctx_device(peer, &peer_dev)) return CUDA_ERROR_INVALID_CONTEXT;
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (peer_dev == dev) return CUDA_ERROR_INVALID_DEVICE;
    uint64_t bit = (uint64_t)1 << peer_dev;
    pthread_mutex_lock(&setting_lock);
    bool was = (peer_enabled[dev] & bit) != 0;
    if (enable && !was) peer_enabled[dev] |= bit;
    if (!enable && was) peer_enabled[dev] &= ~bit;
    pthread_mutex_unlock(&setting_lock);
    if (enable && was) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    if (!enable && !was) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
    return peer_access(peerContext, Flags, true);
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
    return peer_access(peerContext, 0, false);
}

/* ---- streams and events: work is done when it is issued ---- */

static CUresult stream_create(CUstream *phStream, unsigned int Flags, int priority) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (phStream == NULL || Flags > 1) return CUDA_ERROR_INVALID_VALUE;
    struct obj *o = obj_new(OBJ_STREAM, dev);
    if (o == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    o->flags = Flags;
    o->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority; /* clamped, as documented */
    *phStream = (CUstream)o;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags) {
    return stream_create(phStream, Flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
    return stream_create(phStream, flags, priority);
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (leastPriority != NULL) *leastPriority = 0;
    if (greatestPriority != NULL) *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return obj_delete(hStream, OBJ_STREAM) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamDestroy(CUstream hStream) {
    return cuStreamDestroy_v2(hStream);
}

static CUresult stream_check(CUstream hStream) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    return valid_stream(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamQuery(CUstream hStream) {
    return stream_check(hStream);
}

CUresult cuStreamSynchronize(CUstream hStream) {
    return stream_check(hStream);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
    CUresult r = stream_check(hStream);
    if (r != CUDA_SUCCESS) return r;
    return obj_live(hEvent, OBJ_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The stream's work is already done: the callback runs now, on this thread. */
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags) {
    CUresult r = stream_check(hStream);
    if (r != CUDA_SUCCESS) return r;
    if (callback == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    callback(hStream, CUDA_SUCCESS, userData);
    return CUDA_SUCCESS;
}

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                unsigned int flags) {
    return stream_check(hStream);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (phEvent == NULL || Flags > 0xf) return CUDA_ERROR_INVALID_VALUE;
    struct obj *o = obj_new(OBJ_EVENT, dev);
    if (o == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    o->flags = Flags;
    *phEvent = (CUevent)o;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return obj_delete(hEvent, OBJ_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventDestroy(CUevent hEvent) {
    return cuEventDestroy_v2(hEvent);
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
    CUresult r = stream_check(hStream);
    if (r != CUDA_SUCCESS) return r;
    pthread_mutex_lock(&obj_lock);
    struct obj *o = obj_find_locked(hEvent, OBJ_EVENT);
    if (o != NULL) {
        clock_gettime(CLOCK_MONOTONIC, &o->when);
        o->recorded = true;
    }
    pthread_mutex_unlock(&obj_lock);
    return o != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
    return cuEventRecord(hEvent, hStream);
}

static CUresult event_check(CUevent hEvent) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return obj_live(hEvent, OBJ_EVENT) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventQuery(CUevent hEvent) {
    return event_check(hEvent);
}

CUresult cuEventSynchronize(CUevent hEvent) {
    return event_check(hEvent);
}

/* As the real driver: both events recorded and timed, else INVALID_HANDLE. */
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (pMilliseconds == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&obj_lock);
    struct obj *a = obj_find_locked(hStart, OBJ_EVENT), *b = obj_find_locked(hEnd, OBJ_EVENT);
    bool ok = a != NULL && b != NULL && a->recorded && b->recorded &&
              !(a->flags & CU_EVENT_DISABLE_TIMING) && !(b->flags & CU_EVENT_DISABLE_TIMING);
    if (ok) {
        double ms = (double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
                    (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6;
        *pMilliseconds = (float)ms;
    }
    pthread_mutex_unlock(&obj_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event) {
    CUresult r = event_check(event);
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle) {
    CUresult r = fake_cuda_need_init();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- copies and memsets (the async ones are done when issued) ---- */

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    return copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                              CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : copy_htod(dstDevice, srcHost, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : copy_dtoh(dstHost, srcDevice, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy(dstDevice, false, srcDevice, false, ByteCount);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : copy(dstDevice, false, srcDevice, false, ByteCount);
}

/* Unified addressing: either side may be host memory. */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    return copy(dst, true, src, true, ByteCount);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : copy(dst, true, src, true, ByteCount);
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount) {
    int d;
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (!fake_cuda_ctx_device(dstContext, &d) || !fake_cuda_ctx_device(srcContext, &d))
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy(dstDevice, false, srcDevice, false, ByteCount);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
    CUresult r = stream_check(hStream);
    if (r != CUDA_SUCCESS) return r;
    return cuMemcpyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) {
    return copy2d(pCopy);
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
    return copy2d(pCopy);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : copy2d(pCopy);
}

static CUresult not_supported(void) {
    CUresult r = fake_cuda_need_init();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult no_such_handle(void) {
    CUresult r = fake_cuda_need_init();
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_HANDLE;
}

/* 3D copies and every copy from or to an array: there are no arrays. */
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) {
    return not_supported();
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
    return not_supported();
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy) {
    return not_supported();
}

CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream) {
    return not_supported();
}

CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
    return no_such_handle();
}

CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
                         size_t ByteCount) {
    return no_such_handle();
}

CUresult cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount) {
    return no_such_handle();
}

CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
                         size_t ByteCount) {
    return no_such_handle();
}

CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost,
                         size_t ByteCount) {
    return no_such_handle();
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
    return set2d(dstDevice, 0, uc, 1, N, 1);
}

CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
    return set2d(dstDevice, 0, us, 2, N, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
    return set2d(dstDevice, 0, ui, 4, N, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, 0, uc, 1, N, 1);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, 0, us, 2, N, 1);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, 0, ui, 4, N, 1);
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                         size_t Height) {
    return set2d(dstDevice, dstPitch, uc, 1, Width, Height);
}

CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                          size_t Height) {
    return set2d(dstDevice, dstPitch, us, 2, Width, Height);
}

CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                          size_t Height) {
    return set2d(dstDevice, dstPitch, ui, 4, Width, Height);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, dstPitch, uc, 1, Width, Height);
}

CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, dstPitch, us, 2, Width, Height);
}

CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                            size_t Height, CUstream hStream) {
    CUresult r = stream_check(hStream);
    return r != CUDA_SUCCESS ? r : set2d(dstDevice, dstPitch, ui, 4, Width, Height);
}

/* ---- pointers ---- */

/* Pinned host memory is mapped at its own address (unified addressing). */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pdptr == NULL || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    struct fake_range rg;
    if (!fake_cuda_find_range((uintptr_t)p, &rg) ||
        (rg.kind != FAKE_RANGE_HOST && rg.kind != FAKE_RANGE_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int Flags) {
    return CUDA_ERROR_NOT_SUPPORTED; /* 32-bit device pointers cannot hold host addresses */
}

/* The flags given at allocation are not kept: every pinned allocation is
 * portable and mapped under unified addressing, so that is what is reported. */
CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (pFlags == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct fake_range rg;
    if (!fake_cuda_find_range((uintptr_t)p, &rg) || rg.kind != FAKE_RANGE_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
}

enum {
    PA_CONTEXT = 1,
    PA_MEMORY_TYPE = 2,
    PA_DEVICE_POINTER = 3,
    PA_HOST_POINTER = 4,
    PA_P2P_TOKENS = 5,
    PA_SYNC_MEMOPS = 6,
    PA_BUFFER_ID = 7,
    PA_IS_MANAGED = 8,
    PA_DEVICE_ORDINAL = 9,
    PA_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
    PA_RANGE_START_ADDR = 11,
    PA_RANGE_SIZE = 12,
    PA_MAPPED = 13,
    PA_ALLOWED_HANDLE_TYPES = 14,
    PA_IS_GPU_DIRECT_RDMA_CAPABLE = 15,
    PA_ACCESS_FLAGS = 16,
    PA_MEMPOOL_HANDLE = 17,
    PA_MAPPING_SIZE = 18,
    PA_MAPPING_BASE_ADDR = 19,
    PA_MEMORY_BLOCK_ID = 20,
};

static CUresult pointer_attribute(void *data, int attribute, const struct fake_range *rg,
                                  CUdeviceptr ptr) {
    bool host = rg->kind == FAKE_RANGE_HOST || rg->kind == FAKE_RANGE_REGISTERED;
    switch (attribute) {
    case PA_CONTEXT:
        *(CUcontext *)data = fake_cuda_primary_ctx(rg->dev);
        break;
    case PA_MEMORY_TYPE:
        *(unsigned int *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case PA_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        break;
    case PA_HOST_POINTER:
        if (!host) return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case PA_SYNC_MEMOPS:
    case PA_IS_MANAGED:
        *(int *)data = 0;
        break;
    case PA_BUFFER_ID:
    case PA_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = rg->base;
        break;
    case PA_DEVICE_ORDINAL:
        *(int *)data = rg->dev;
        break;
    case PA_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = rg->kind == FAKE_RANGE_DEVICE;
        break;
    case PA_RANGE_START_ADDR:
    case PA_MAPPING_BASE_ADDR:
        *(CUdeviceptr *)data = rg->base;
        break;
    case PA_RANGE_SIZE:
    case PA_MAPPING_SIZE:
        *(size_t *)data = rg->size;
        break;
    case PA_MAPPED:
        *(int *)data = 1;
        break;
    case PA_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        break;
    case PA_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(int *)data = 0;
        break;
    case PA_ACCESS_FLAGS:
        *(int *)data = 3; /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE */
        break;
    case PA_MEMPOOL_HANDLE:
        *(void **)data = NULL;
        break;
    case PA_P2P_TOKENS:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct fake_range rg;
    if (!fake_cuda_find_range((uintptr_t)ptr, &rg)) return CUDA_ERROR_INVALID_VALUE;
    return pointer_attribute(data, attribute, &rg, ptr);
}

/* Unknown pointers are not an error here: MEMORY_TYPE reads 0 and the rest
 * are zeroed, as documented for memory the driver does not know. */
CUresult cuPointerGetAttributes(unsigned int numAttributes, int *attributes, void **data,
                                CUdeviceptr ptr) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (numAttributes == 0 || attributes == NULL || data == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct fake_range rg;
    bool known = fake_cuda_find_range((uintptr_t)ptr, &rg);
    for (unsigned int i = 0; i < numAttributes; i++) {
        if (data[i] == NULL) continue;
        if (!known) {
            if (attributes[i] == PA_CONTEXT || attributes[i] == PA_HOST_POINTER ||
                attributes[i] == PA_DEVICE_POINTER || attributes[i] == PA_MEMPOOL_HANDLE)
                *(void **)data[i] = NULL;
            else if (attributes[i] == PA_DEVICE_ORDINAL)
                *(int *)data[i] = -2;
            else if (attributes[i] == PA_BUFFER_ID || attributes[i] == PA_MEMORY_BLOCK_ID ||
                     attributes[i] == PA_ALLOWED_HANDLE_TYPES ||
                     attributes[i] == PA_RANGE_START_ADDR || attributes[i] == PA_RANGE_SIZE ||
                     attributes[i] == PA_MAPPING_SIZE || attributes[i] == PA_MAPPING_BASE_ADDR)
                *(unsigned long long *)data[i] = 0;
            else
                *(int *)data[i] = 0;
            continue;
        }
        r = pointer_attribute(data[i], attributes[i], &rg, ptr);
        if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_SUPPORTED) return r;
    }
    return CUDA_SUCCESS;
}

/* ---- modules and kernels: everything loads, launches do nothing ---- */

static CUresult module_new(CUmodule *module, const void *image) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (module == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct obj *o = obj_new(OBJ_MODULE, dev);
    if (o == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *module = (CUmodule)o;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if (fname == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (access(fname, R_OK) != 0) return CUDA_ERROR_FILE_NOT_FOUND;
    return module_new(module, fname);
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    return module_new(module, image);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                            int *options, void **optionValues) {
    return module_new(module, image);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) {
    return module_new(module, fatCubin);
}

CUresult cuModuleUnload(CUmodule hmod) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return obj_delete(hmod, OBJ_MODULE) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (hfunc == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&obj_lock);
    struct obj *m = obj_find_locked(hmod, OBJ_MODULE);
    int dev = m != NULL ? m->dev : 0;
    pthread_mutex_unlock(&obj_lock);
    if (m == NULL) return CUDA_ERROR_INVALID_HANDLE;
    struct obj *f = obj_new(OBJ_FUNCTION, dev);
    if (f == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    f->module = m; /* freed with its module */
    *hfunc = (CUfunction)f;
    return CUDA_SUCCESS;
}

/* No module has globals: they would be device memory that no allocation
 * hook sees, and nothing here needs them. */
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    if (!obj_live(hmod, OBJ_MODULE)) return CUDA_ERROR_INVALID_HANDLE;
    return name == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_FOUND;
}

CUresult cuModuleGetTexRef(CUtexref *pTexRef, CUmodule hmod, const char *name) {
    return cuModuleGetGlobal_v2(NULL, NULL, hmod, name);
}

CUresult cuModuleGetSurfRef(CUsurfref *pSurfRef, CUmodule hmod, const char *name) {
    return cuModuleGetGlobal_v2(NULL, NULL, hmod, name);
}

static CUresult function_check(CUfunction f) {
    CUresult r = fake_cuda_need_init();
    if (r != CUDA_SUCCESS) return r;
    return obj_live(f, OBJ_FUNCTION) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* CU_FUNC_ATTRIBUTE_*: what a small kernel compiled for sm_90 reports. */
CUresult cuFuncGetAttribute(int *pi, int attrib, CUfunction hfunc) {
    CUresult r = function_check(hfunc);
    if (r != CUDA_SUCCESS) return r;
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
    case 0: /* MAX_THREADS_PER_BLOCK */
        *pi = 1024;
        break;
    case 4: /* NUM_REGS */
        *pi = 16;
        break;
    case 5: /* PTX_VERSION */
    case 6: /* BINARY_VERSION */
        *pi = 90;
        break;
    case 8: /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
        *pi = 49152;
        break;
    case 9: /* PREFERRED_SHARED_MEMORY_CARVEOUT */
        *pi = -1;
        break;
    case 1:  /* SHARED_SIZE_BYTES */
    case 2:  /* CONST_SIZE_BYTES */
    case 3:  /* LOCAL_SIZE_BYTES */
    case 7:  /* CACHE_MODE_CA */
    case 10: /* CLUSTER_SIZE_MUST_BE_SET */
    case 11: /* REQUIRED_CLUSTER_WIDTH */
    case 12: /* REQUIRED_CLUSTER_HEIGHT */
    case 13: /* REQUIRED_CLUSTER_DEPTH */
    case 14: /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
    case 15: /* CLUSTER_SCHEDULING_POLICY_PREFERENCE */
        *pi = 0;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, int attrib, int value) {
    return function_check(hfunc);
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, int config) {
    return function_check(hfunc);
}

CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, int config) {
    return function_check(hfunc);
}

CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z) {
    return function_check(hfunc);
}

CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes) {
    return function_check(hfunc);
}

CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes) {
    return function_check(hfunc);
}

CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value) {
    return function_check(hfunc);
}

CUresult cuParamSetf(CUfunction hfunc, int offset, float value) {
    return function_check(hfunc);
}

CUresult cuParamSetv(CUfunction hfunc, int offset, void *ptr, unsigned int numbytes) {
    return function_check(hfunc);
}

CUresult cuParamSetTexRef(CUfunction hfunc, int texunit, CUtexref hTexRef) {
    CUresult r = function_check(hfunc);
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream hStream) {
    int dev;
    CUresult r = fake_cuda_need_ctx(&dev);
    if (r != CUDA_SUCCESS) return r;
    if ((r = function_check(f)) != CUDA_SUCCESS) return r;
    if (!valid_stream(hStream)) return CUDA_ERROR_INVALID_HANDLE;
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
        (unsigned long long)bx * by * bz > 1024 || bz > 64 || gy > 65535 || gz > 65535)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra) {
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams) {
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

CUresult cuLaunch(CUfunction f) {
    return launch(f, 1, 1, 1, 1, 1, 1, NULL);
}

CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height) {
    return launch(f, (unsigned)grid_width, (unsigned)grid_height, 1, 1, 1, 1, NULL);
}

CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream) {
    return launch(f, (unsigned)grid_width, (unsigned)grid_height, 1, 1, 1, 1, hStream);
}

/* Occupancy of a kernel that uses 16 registers and no shared memory: as many
 * threads per SM as the SM holds. */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                              int blockSize, size_t dynamicSMemSize,
                                                              unsigned int flags) {
    CUresult r = function_check(func);
    if (r != CUDA_SUCCESS) return r;
    if (numBlocks == NULL || blockSize <= 0 || blockSize > 1024) return CUDA_ERROR_INVALID_VALUE;
    int n = 2048 / blockSize;
    *numBlocks = n > 32 ? 32 : n;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                dynamicSMemSize, 0);
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize,
                                                   CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit,
                                                   unsigned int flags) {
    CUresult r = function_check(func);
    if (r != CUDA_SUCCESS) return r;
    if (minGridSize == NULL || blockSize == NULL) return CUDA_ERROR_INVALID_VALUE;
    int b = blockSizeLimit > 0 && blockSizeLimit < 1024 ? blockSizeLimit : 1024;
    *blockSize = b;
    *minGridSize = FAKE_SM_COUNT * (2048 / b > 32 ? 32 : 2048 / b);
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit) {
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
                                                     blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                     blockSizeLimit, 0);
}

/* The JIT linker: there is no PTX compiler here. */
CUresult cuLinkCreate_v2(unsigned int numOptions, int *options, void **optionValues,
                         CUlinkState *stateOut) {
    return not_supported();
}

CUresult cuLinkAddData_v2(CUlinkState state, int type, void *data, size_t size, const char *name,
                          unsigned int numOptions, int *options, void **optionValues) {
    return no_such_handle();
}

CUresult cuLinkAddFile_v2(CUlinkState state, int type, const char *path, unsigned int numOptions,
                          int *options, void **optionValues) {
    return no_such_handle();
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut) {
    return no_such_handle();
}

CUresult cuLinkDestroy(CUlinkState state) {
    return no_such_handle();
}

/* ---- arrays, textures, surfaces, OpenGL: not supported ----
 * (an array would be device memory that leakwatch does not see) */

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray) {
    return not_supported();
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray) {
    return not_supported();
}

CUresult cuArrayDestroy(CUarray hArray) {
    return no_such_handle();
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
    return no_such_handle();
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray) {
    return no_such_handle();
}

CUresult cuTexRefCreate(CUtexref *pTexRef) {
    return not_supported();
}

CUresult cuTexRefDestroy(CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefGetAddressMode(int *pam, CUtexref hTexRef, int dim) {
    return no_such_handle();
}

CUresult cuTexRefGetAddress_v2(CUdeviceptr *pdptr, CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefGetArray(CUarray *phArray, CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefGetFilterMode(int *pfm, CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefGetFlags(unsigned int *pFlags, CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefGetFormat(int *pFormat, int *pNumChannels, CUtexref hTexRef) {
    return no_such_handle();
}

CUresult cuTexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR *desc,
                                 CUdeviceptr dptr, size_t Pitch) {
    return no_such_handle();
}

CUresult cuTexRefSetAddressMode(CUtexref hTexRef, int dim, int am) {
    return no_such_handle();
}

CUresult cuTexRefSetAddress_v2(size_t *ByteOffset, CUtexref hTexRef, CUdeviceptr dptr,
                               size_t bytes) {
    return no_such_handle();
}

CUresult cuTexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
    return no_such_handle();
}

CUresult cuTexRefSetFilterMode(CUtexref hTexRef, int fm) {
    return no_such_handle();
}

CUresult cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
    return no_such_handle();
}

CUresult cuTexRefSetFormat(CUtexref hTexRef, int fmt, int NumPackedComponents) {
    return no_such_handle();
}

CUresult cuSurfRefGetArray(CUarray *phArray, CUsurfref hSurfRef) {
    return no_such_handle();
}

CUresult cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
    return no_such_handle();
}

CUresult cuGLInit(void) {
    return not_supported();
}

CUresult cuGLCtxCreate_v2(CUcontext *pCtx, unsigned int Flags, CUdevice device) {
    return not_supported();
}

CUresult cuGLMapBufferObject_v2(CUdeviceptr *dptr, size_t *size, GLuint buffer) {
    return not_supported();
}

CUresult cuGLRegisterBufferObject(GLuint buffer) {
    return not_supported();
}

CUresult cuGLUnmapBufferObject(GLuint buffer) {
    return not_supported();
}

CUresult cuGLUnregisterBufferObject(GLuint buffer) {
    return not_supported();
}

CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource *pCudaResource, GLuint buffer,
                                    unsigned int Flags) {
    return not_supported();
}

CUresult cuGraphicsGLRegisterImage(CUgraphicsResource *pCudaResource, GLuint image, GLenum target,
                                   unsigned int Flags) {
    return not_supported();
}

CUresult cuGraphicsMapResources(unsigned int count, CUgraphicsResource *resources,
                                CUstream hStream) {
    return no_such_handle();
}

CUresult cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource *resources,
                                  CUstream hStream) {
    return no_such_handle();
}

CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr *pDevPtr, size_t *pSize,
                                               CUgraphicsResource resource) {
    return no_such_handle();
}

CUresult cuGraphicsSubResourceGetMappedArray(CUarray *pArray, CUgraphicsResource resource,
                                             unsigned int arrayIndex, unsigned int mipLevel) {
    return no_such_handle();
}

CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource) {
    return no_such_handle();
}

/* ---- profiler ---- */

CUresult cuProfilerInitialize(const char *configFile, const char *outputFile, int outputMode) {
    return fake_cuda_need_init();
}

CUresult cuProfilerStart(void) {
    return fake_cuda_need_init();
}

CUresult cuProfilerStop(void) {
    return fake_cuda_need_init();
}

/* ---- error strings (work before cuInit, as the real ones) ---- */

static const struct {
    CUresult code;
    const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {5, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using external profiling tool"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {208, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
     "peer access is not supported between these two devices"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "cannot set while device is active in this process"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult error, const char **pStr, bool name) {
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == error) {
            *pStr = name ? errors[i].name : errors[i].text;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
    return error_lookup(error, pStr, false);
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
    return error_lookup(error, pStr, true);
}
