/* SPDX-License-Identifier: Apache-2.0 */
/* Reaches CUDA through the driver API: linked to libcuda.so.1 directly, or
 * through dlsym / cuGetProcAddress as libraries that load it themselves do.
 * Usage: drv_paths PATH [COUNT [SIZE]] */
#include "exporter.h"
#include "paths.h"

#include <dlfcn.h>

CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *d, size_t s);
CUresult cuMemFree_v2(CUdeviceptr d);
CUresult cuMemAllocPitch_v2(CUdeviceptr *d, size_t *pitch, size_t w, size_t h, unsigned int e);
CUresult cuMemAllocManaged(CUdeviceptr *d, size_t s, unsigned int flags);
CUresult cuMemAllocAsync(CUdeviceptr *d, size_t s, CUstream st);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t s, CUstream st);
CUresult cuMemFreeAsync(CUdeviceptr d, CUstream st);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr d, CUstream st);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t s, CUmemoryPool p, CUstream st);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t s, CUmemoryPool p, CUstream st);
CUresult cuMemHostAlloc(void **p, size_t s, unsigned int flags);
CUresult cuMemAllocHost_v2(void **p, size_t s);
CUresult cuMemFreeHost(void *p);
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t s, const CUmemAllocationProp *prop,
                     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle h);
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t s, size_t align, CUdeviceptr addr,
                             unsigned long long flags);
CUresult cuMemMap(CUdeviceptr p, size_t s, size_t o, CUmemGenericAllocationHandle h,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr p, size_t s);
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *h, void *addr);
CUresult cuMemHostRegister_v2(void *p, size_t s, unsigned int flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr d);
CUresult cuIpcOpenMemHandle(CUdeviceptr *d, CUipcMemHandle h, unsigned int flags);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *d, CUipcMemHandle h, unsigned int flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr d);
CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle h,
                                      CUmemAllocationHandleType type, unsigned long long flags);
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *h, void *os,
                                        CUmemAllocationHandleType type);

static long count, size;
#define POOL ((CUmemoryPool)(uintptr_t)0x5000) /* any non-NULL pool, for the stand-in */

NOINLINE static void leak_driver(const char *path) {
    for (long i = 0; i < count; i++) {
        CUdeviceptr d;
        void *h;
        size_t pitch;
        if (!strcmp(path, "alloc"))
            CHECK(cuMemAlloc_v2(&d, (size_t)size));
        else if (!strcmp(path, "pitch"))
            CHECK(cuMemAllocPitch_v2(&d, &pitch, 4096, (size_t)size / 4096, 4));
        else if (!strcmp(path, "managed"))
            CHECK(cuMemAllocManaged(&d, (size_t)size, 1));
        else if (!strcmp(path, "async"))
            CHECK(cuMemAllocAsync(&d, (size_t)size, NULL));
        else if (!strcmp(path, "async_ptsz"))
            CHECK(cuMemAllocAsync_ptsz(&d, (size_t)size, NULL));
        else if (!strcmp(path, "pool"))
            CHECK(cuMemAllocFromPoolAsync(&d, (size_t)size, POOL, NULL));
        else if (!strcmp(path, "pool_ptsz"))
            CHECK(cuMemAllocFromPoolAsync_ptsz(&d, (size_t)size, POOL, NULL));
        else if (!strcmp(path, "hostalloc"))
            CHECK(cuMemHostAlloc(&h, (size_t)size, 0));
        else if (!strcmp(path, "allochost"))
            CHECK(cuMemAllocHost_v2(&h, (size_t)size));
        else if (!strcmp(path, "hostregister")) {
            h = malloc((size_t)size);
            if (!h) exit(3);
            CHECK(cuMemHostRegister_v2(h, (size_t)size, 0));
        } else {
            fprintf(stderr, "unknown path %s\n", path);
            exit(2);
        }
    }
}

NOINLINE static void churn_driver(void) {
    for (int i = 0; i < 4; i++) {
        CUdeviceptr d;
        void *h;
        CHECK(cuMemAlloc_v2(&d, 4096));
        CHECK(cuMemFree_v2(d));
        CHECK(cuMemAllocAsync(&d, 4096, NULL));
        CHECK(cuMemFreeAsync(d, NULL));
        CHECK(cuMemAllocAsync_ptsz(&d, 4096, NULL));
        CHECK(cuMemFreeAsync_ptsz(d, NULL));
        CHECK(cuMemAllocHost_v2(&h, 4096));
        CHECK(cuMemFreeHost(h));
        char *mine = malloc(4096);
        if (!mine) exit(3);
        CHECK(cuMemHostRegister_v2(mine, 4096, 0));
        CHECK(cuMemHostUnregister(mine));
        free(mine);
    }
}

NOINLINE static void leak_vmm_direct(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, (size_t)size * (size_t)(count + 1), 0, 0, 0));
    for (long i = 0; i < count; i++) {
        CUmemGenericAllocationHandle h;
        CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
        CHECK(cuMemMap(va + (CUdeviceptr)i * (CUdeviceptr)size, (size_t)size, 0, h, 0));
    }
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
    CHECK(cuMemRelease(h));
}

static CUmemAllocationProp vmm_prop(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}

/* The CUDA samples' idiom: the handle is released at once, the mapping keeps
 * the memory. count pages, all left mapped (the leak). */
NOINLINE static void leak_vmm_released_mapped(CUdeviceptr va) {
    CUmemAllocationProp prop = vmm_prop();
    for (long i = 0; i < count; i++) {
        CUmemGenericAllocationHandle h;
        CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
        CHECK(cuMemMap(va + (CUdeviceptr)i * (CUdeviceptr)size, (size_t)size, 0, h, 0));
        CHECK(cuMemRelease(h));
    }
}

/* NCCL's ncclCuMemAlloc / ncclCuMemFree: the handle is kept while mapped;
 * the free retains it from the address, releases that reference, unmaps,
 * and releases the creation's reference. */
NOINLINE static void nccl_alloc_free(CUdeviceptr at) {
    CUmemAllocationProp prop = vmm_prop();
    CUmemGenericAllocationHandle h, again;
    CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
    CHECK(cuMemMap(at, (size_t)size, 0, h, 0));
    CHECK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(at + 4096)));
    if (again != h) exit(5);
    CHECK(cuMemRelease(again));
    CHECK(cuMemUnmap(at, (size_t)size));
    CHECK(cuMemRelease(h));
}

/* count pages leaked the samples' way, then one of them unmapped; NCCL's
 * allocation and free twice (nothing left), and a handle released while
 * mapped, retained again and unmapped before its last release. */
NOINLINE static void vmm_idioms(void) {
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, (size_t)size * (size_t)(count + 3), 0, 0, 0));
    leak_vmm_released_mapped(va);
    CHECK(cuMemUnmap(va, (size_t)size)); /* the first page goes */
    CUdeviceptr spare = va + (CUdeviceptr)count * (CUdeviceptr)size;
    nccl_alloc_free(spare);
    nccl_alloc_free(spare);
    CUmemAllocationProp prop = vmm_prop();
    CUmemGenericAllocationHandle h, again;
    CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
    CHECK(cuMemMap(spare, (size_t)size, 0, h, 0));
    CHECK(cuMemRelease(h));
    CHECK(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)spare));
    CHECK(cuMemUnmap(spare, (size_t)size));                       /* still referenced: stays */
    if (cuMemUnmap(spare, (size_t)size) == CUDA_SUCCESS) exit(6); /* refused: nothing changes */
    if (cuMemRelease(12345) == CUDA_SUCCESS) exit(7);             /* not a handle */
    CHECK(cuMemRelease(again));                                   /* now it goes */
}

/* PyTorch 2.1 style: dlopen the driver, dlsym each function by its name. */
NOINLINE static void leak_dlsym(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
    lw_pfn_cuMemAlloc_v3020 alloc = (lw_pfn_cuMemAlloc_v3020)dlsym(lib, "cuMemAlloc_v2");
    lw_pfn_cuMemFree_v3020 release = (lw_pfn_cuMemFree_v3020)dlsym(lib, "cuMemFree_v2");
    lw_pfn_cuMemAllocAsync_v11020 async =
        (lw_pfn_cuMemAllocAsync_v11020)dlsym(lib, "cuMemAllocAsync_ptsz");
    if (!alloc || !release || !async) exit(3);
    CUdeviceptr d;
    for (long i = 0; i < count; i++)
        CHECK(alloc(&d, (size_t)size));
    CHECK(async(&d, 4096, NULL));
    CHECK(release(d));
}

/* A library that asks the driver's cuGetProcAddress_v2 itself, with the
 * per-thread-stream flag for the async functions. */
NOINLINE static void leak_procaddress(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    lw_pfn_cuGetProcAddress_v12000 gpa =
        (lw_pfn_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    lw_pfn_cuGetProcAddress_v11030 gpa_legacy =
        (lw_pfn_cuGetProcAddress_v11030)dlsym(lib, "cuGetProcAddress");
    if (!gpa || !gpa_legacy) exit(3);
    lw_pfn_cuMemAllocAsync_v11020 a_ptsz = NULL, a_plain = NULL;
    lw_pfn_cuMemFreeAsync_v11020 f_ptsz = NULL;
    lw_pfn_cuMemAlloc_v3020 alloc = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK(gpa("cuMemAllocAsync", (void **)&a_ptsz, 12000,
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    CHECK(gpa("cuMemAllocAsync", (void **)&a_plain, 12000, 0, &st));
    CHECK(gpa("cuMemFreeAsync", (void **)&f_ptsz, 12000,
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
    CHECK(gpa_legacy("cuMemAlloc", (void **)&alloc, 11030, 0));
    if (!a_ptsz || !a_plain || !f_ptsz || !alloc || a_ptsz == a_plain) exit(4);
    CUdeviceptr d;
    for (long i = 0; i < count; i++)
        CHECK(a_ptsz(&d, (size_t)size, NULL));
    for (long i = 0; i < count; i++)
        CHECK(a_plain(&d, (size_t)size, NULL));
    CHECK(alloc(&d, (size_t)size));
    CHECK(f_ptsz(d, NULL));
    /* cuGetProcAddress asked for itself: what the runtime does first. */
    lw_pfn_cuGetProcAddress_v12000 gpa2 = NULL;
    CHECK(gpa("cuGetProcAddress", (void **)&gpa2, 12000, 0, NULL));
    lw_pfn_cuMemAlloc_v3020 alloc2 = NULL;
    CHECK(gpa2("cuMemAlloc", (void **)&alloc2, 12000, 0, NULL));
    CHECK(alloc2(&d, (size_t)size));
}

/* CUDA 13 answers a lookup of "cuCtxGetDevice" at 13000 with the
 * two-argument cuCtxGetDevice_v2: leakwatch must not take it for the one it
 * calls to learn an allocation's device. */
NOINLINE static void leak_after_ctx_lookup(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    lw_pfn_cuGetProcAddress_v12000 gpa =
        (lw_pfn_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    void *fn = NULL;
    CHECK(gpa("cuCtxGetDevice", &fn, 13000, 0, NULL));
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 1));
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr d;
    for (long i = 0; i < count; i++)
        CHECK(cuMemAlloc_v2(&d, (size_t)size));
}

/* The exporter of IPC handles: count cuMemAlloc allocations. */
static void export_ipc(int sock) {
    for (long i = 0; i < count; i++) {
        CUdeviceptr d;
        CUipcMemHandle h;
        CHECK(cuMemAlloc_v2(&d, (size_t)size));
        CHECK(cuIpcGetMemHandle(&h, d));
        xfer_all(sock, &h, sizeof h, 1);
    }
}

/* As rt_paths' ipc, through the driver: cuIpcOpenMemHandle_v2 (what cuda.h
 * names cuIpcOpenMemHandle); the first handle opened again through
 * cuGetProcAddress at 4010 (the real runtime looks the function up at 4010
 * and 11000), the second through the CUDA 4.1 export and closed through
 * dlsym. count - 1 imports stay open. */
NOINLINE static void import_ipc(void) {
    pid_t pid;
    int sock = exporter_start(export_ipc, &pid);
    CUipcMemHandle h[16];
    CUdeviceptr d[16], again = 0, mine, opened = 0;
    if (count > 16) exit(3);
    for (long i = 0; i < count; i++)
        xfer_all(sock, &h[i], sizeof h[i], 0);
    for (long i = 0; i < count; i++)
        CHECK(cuIpcOpenMemHandle_v2(&d[i], h[i], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    /* Opened memory can be written (device memory is host memory on the
     * stand-ins, unless its addresses are plain numbers). */
    const char *no_reserve = getenv("FAKE_CUDA_NO_RESERVE");
    if (no_reserve == NULL || strcmp(no_reserve, "1") != 0) {
        for (long i = 0; i < count; i++)
            memset((void *)(uintptr_t)d[i], 0x5a, (size_t)size);
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    lw_pfn_cuGetProcAddress_v12000 gpa =
        lib ? (lw_pfn_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    lw_pfn_cuIpcOpenMemHandle_v11000 open_4010 = NULL;
    if (!gpa) exit(3);
    CHECK(gpa("cuIpcOpenMemHandle", (void **)&open_4010, 4010, 0, NULL));
    if (!open_4010) exit(3);
    CHECK(open_4010(&again, h[0], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    if (again != d[0]) exit(5);
    CUdeviceptr again1 = 0;
    if (count > 1) {
        CHECK(cuIpcOpenMemHandle(&again1, h[1], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        if (again1 != d[1]) exit(5);
    }
    CUipcMemHandle own;
    CHECK(cuMemAlloc_v2(&mine, (size_t)size));
    CHECK(cuIpcGetMemHandle(&own, mine));
    if (cuIpcOpenMemHandle_v2(&opened, own, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) !=
        CUDA_ERROR_INVALID_CONTEXT)
        exit(6);
    CHECK(cuMemFree_v2(mine));
    CHECK(cuIpcCloseMemHandle(d[0]));
    CHECK(cuIpcCloseMemHandle(again));
    if (cuIpcCloseMemHandle(d[0]) == CUDA_SUCCESS) exit(7);
    /* The last close through dlsym, as a library that loads the driver does. */
    lw_pfn_cuIpcCloseMemHandle_v4010 close_dlsym =
        (lw_pfn_cuIpcCloseMemHandle_v4010)dlsym(lib, "cuIpcCloseMemHandle");
    if (!close_dlsym) exit(3);
    if (count > 1) CHECK(close_dlsym(again1));
    exporter_stop(sock, pid);
}

/* The exporter of shareable handles: count pages of physical memory made
 * exportable as file descriptors. */
static void export_shareable(int sock) {
    CUmemAllocationProp prop = vmm_prop();
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    for (long i = 0; i < count; i++) {
        CUmemGenericAllocationHandle h;
        int fd = -1;
        CHECK(cuMemCreate(&h, (size_t)size, &prop, 0));
        CHECK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        send_fd(sock, fd);
        close(fd);
    }
}

/* The CUDA samples' memMapIPCDrv, importer side: each page imported, mapped,
 * its handle released at once (the mapping keeps it); then the first page
 * unmapped (that import ends) and a page of this process's own mapped
 * beside them. count - 1 imports stay mapped. */
NOINLINE static void import_shareable(void) {
    pid_t pid;
    int sock = exporter_start(export_shareable, &pid);
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, (size_t)size * (size_t)(count + 1), 0, 0, 0));
    for (long i = 0; i < count; i++) {
        int fd = recv_fd(sock);
        CUmemGenericAllocationHandle h;
        CHECK(cuMemImportFromShareableHandle(&h, (void *)(intptr_t)fd,
                                             CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
        close(fd);
        CHECK(cuMemMap(va + (CUdeviceptr)i * (CUdeviceptr)size, (size_t)size, 0, h, 0));
        CHECK(cuMemRelease(h));
    }
    CHECK(cuMemUnmap(va, (size_t)size));
    CUmemAllocationProp prop = vmm_prop();
    CUmemGenericAllocationHandle own;
    CHECK(cuMemCreate(&own, (size_t)size, &prop, 0));
    CHECK(cuMemMap(va + (CUdeviceptr)count * (CUdeviceptr)size, (size_t)size, 0, own, 0));
    exporter_stop(sock, pid);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "alloc";
    count = arg_long(argc, argv, 2, 3);
    size = arg_long(argc, argv, 3, 1 << 20);
    CHECK(cuInit(0));
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    if (!strcmp(path, "vmm"))
        leak_vmm_direct();
    else if (!strcmp(path, "vmm_idioms"))
        vmm_idioms();
    else if (!strcmp(path, "ipc")) {
        import_ipc();
        leak_driver("alloc");
    } else if (!strcmp(path, "shareable")) {
        if (size % (2 << 20)) size = 2 << 20; /* VMM sizes: multiples of the granularity */
        import_shareable();
    } else if (!strcmp(path, "dlsym"))
        leak_dlsym();
    else if (!strcmp(path, "procaddress"))
        leak_procaddress();
    else if (!strcmp(path, "ctxv2"))
        leak_after_ctx_lookup();
    else {
        churn_driver();
        leak_driver(path);
    }
    return 0;
}
