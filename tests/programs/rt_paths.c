/* SPDX-License-Identifier: Apache-2.0 */
/* Reaches CUDA through the runtime, linked dynamically (like PyTorch's pip
 * wheels). Usage: rt_paths PATH [COUNT [SIZE]] */
#include "exporter.h"
#include "paths.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync(void **p, size_t s, cudaStream_t st);
cudaError_t cudaFreeAsync(void *p, cudaStream_t st);
cudaError_t cudaMallocAsync_ptsz(void **p, size_t s, cudaStream_t st);
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t st);
cudaError_t cudaMallocFromPoolAsync(void **p, size_t s, cudaMemPool_t pool, cudaStream_t st);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t s, cudaMemPool_t pool, cudaStream_t st);
cudaError_t cudaMallocManaged(void **p, size_t s, unsigned int flags);
cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t w, size_t h);
cudaError_t cudaMallocHost(void **p, size_t s);
cudaError_t cudaHostAlloc(void **p, size_t s, unsigned int flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostRegister(void *p, size_t s, unsigned int flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p);
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags);
cudaError_t cudaIpcCloseMemHandle(void *p);
cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fp, unsigned int version,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *st);
cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fp, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *st);

static long count, size;
/* A memory pool handle (the stand-in accepts any non-NULL one, as the device
 * default pool would be). */
#define POOL ((cudaMemPool_t)(uintptr_t)0x5000)

/* One allocation through the path named; returns the pointer. */
static void *alloc_via(const char *path, size_t n) {
    void *p = NULL;
    size_t pitch = 0;
    if (!strcmp(path, "malloc"))
        CHECK(cudaMalloc(&p, n));
    else if (!strcmp(path, "async"))
        CHECK(cudaMallocAsync(&p, n, NULL));
    else if (!strcmp(path, "async_ptsz"))
        CHECK(cudaMallocAsync_ptsz(&p, n, NULL));
    else if (!strcmp(path, "pool"))
        CHECK(cudaMallocFromPoolAsync(&p, n, POOL, NULL));
    else if (!strcmp(path, "pool_ptsz"))
        CHECK(cudaMallocFromPoolAsync_ptsz(&p, n, POOL, NULL));
    else if (!strcmp(path, "managed"))
        CHECK(cudaMallocManaged(&p, n, 1));
    else if (!strcmp(path, "pitch"))
        CHECK(cudaMallocPitch(&p, &pitch, 4096, n / 4096));
    else if (!strcmp(path, "host"))
        CHECK(cudaMallocHost(&p, n));
    else if (!strcmp(path, "hostalloc"))
        CHECK(cudaHostAlloc(&p, n, 0));
    else if (!strcmp(path, "hostregister")) {
        p = malloc(n); /* the program's own memory, page-locked */
        if (!p) exit(3);
        CHECK(cudaHostRegister(p, n, 0));
    } else if (!strcmp(path, "device1")) {
        CHECK(cudaSetDevice(1));
        CHECK(cudaMalloc(&p, n));
    } else {
        fprintf(stderr, "unknown path %s\n", path);
        exit(2);
    }
    return p;
}

static void free_via(const char *path, void *p) {
    if (!strcmp(path, "async") || !strcmp(path, "pool"))
        CHECK(cudaFreeAsync(p, NULL));
    else if (!strcmp(path, "async_ptsz") || !strcmp(path, "pool_ptsz"))
        CHECK(cudaFreeAsync_ptsz(p, NULL));
    else if (!strcmp(path, "host") || !strcmp(path, "hostalloc"))
        CHECK(cudaFreeHost(p));
    else if (!strcmp(path, "hostregister")) {
        CHECK(cudaHostUnregister(p));
        free(p);
    } else
        CHECK(cudaFree(p));
}

NOINLINE static void leak_runtime(const char *path) {
    for (long i = 0; i < count; i++)
        alloc_via(path, (size_t)size);
}

NOINLINE static void churn_runtime(const char *path) {
    for (int i = 0; i < 5; i++)
        free_via(path, alloc_via(path, 8192));
}

/* Driver functions found through the runtime's entry-point API, the way
 * PyTorch >= 2.5 finds cuMemCreate for expandable segments. */
NOINLINE static void leak_entrypoint(void) {
    lw_pfn_cuMemAlloc_v3020 alloc = NULL;
    lw_pfn_cuMemFree_v3020 release = NULL;
    enum cudaDriverEntryPointQueryResult st;
    CHECK(cudaFree(NULL)); /* initialise: makes the device's context current */
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", (void **)&alloc, 12000, 0, &st));
    CHECK(cudaGetDriverEntryPoint("cuMemFree", (void **)&release, 0, &st));
    CUdeviceptr d;
    for (long i = 0; i < count; i++)
        CHECK(alloc(&d, (size_t)size));
    CHECK(alloc(&d, 4096));
    CHECK(release(d));
}

NOINLINE static void leak_vmm(void) {
    lw_pfn_cuMemCreate_v10020 create = NULL;
    lw_pfn_cuMemRelease_v10020 release = NULL;
    lw_pfn_cuMemMap_v10020 map = NULL;
    lw_pfn_cuMemUnmap_v10020 unmap = NULL;
    CHECK(cudaFree(NULL)); /* initialise, as PyTorch does */
    CHECK(cudaGetDriverEntryPointByVersion("cuMemCreate", (void **)&create, 12000, 0, NULL));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemRelease", (void **)&release, 12000, 0, NULL));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemMap", (void **)&map, 12000, 0, NULL));
    CHECK(cudaGetDriverEntryPointByVersion("cuMemUnmap", (void **)&unmap, 12000, 0, NULL));
    typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    reserve_fn reserve = NULL;
    CHECK(
        cudaGetDriverEntryPointByVersion("cuMemAddressReserve", (void **)&reserve, 12000, 0, NULL));
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUdeviceptr va;
    CHECK(reserve(&va, (size_t)size * (size_t)(count + 1), 0, 0, 0));
    for (long i = 0; i < count; i++) {
        CUmemGenericAllocationHandle h;
        CHECK(create(&h, (size_t)size, &prop, 0));
        CHECK(map(va + (CUdeviceptr)i * (CUdeviceptr)size, (size_t)size, 0, h, 0));
    }
    CUmemGenericAllocationHandle h;
    CHECK(create(&h, (size_t)size, &prop, 0));
    CHECK(map(va + (CUdeviceptr)count * (CUdeviceptr)size, (size_t)size, 0, h, 0));
    CHECK(unmap(va + (CUdeviceptr)count * (CUdeviceptr)size, (size_t)size));
    CHECK(release(h));
}

/* A free of a pointer never allocated: must still reach the driver, whose
 * answer (an error) comes back unchanged. */
NOINLINE static int free_unknown(void) {
    return cudaFree((void *)(uintptr_t)0x1234000);
}

NOINLINE static void leak_oom(void) {
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, (size_t)size);
    printf("oom result %d\n", r);
}

/* The same address handed out again after a free must be tracked as new. */
NOINLINE static void leak_reuse(void) {
    void *first = alloc_via("malloc", (size_t)size);
    CHECK(cudaFree(first));
    int same = 0;
    for (long i = 0; i < count; i++) {
        void *p = alloc_via("malloc", (size_t)size);
        same += p == first;
    }
    printf("reused %d\n", same);
}

typedef struct {
    int id;
} thread_arg;

NOINLINE static void *leak_thread(void *arg) {
    (void)arg;
    /* Each thread churns many allocations and leaks `count` of them. */
    for (int round = 0; round < 2000; round++) {
        void *p = alloc_via("async_ptsz", 512);
        free_via("async_ptsz", p);
    }
    for (long i = 0; i < count; i++)
        alloc_via("malloc", (size_t)size);
    return NULL;
}

/* The exporter: count allocations of size bytes, one IPC handle each. */
static void export_ipc(int sock) {
    for (long i = 0; i < count; i++) {
        void *p;
        cudaIpcMemHandle_t h;
        CHECK(cudaMalloc(&p, (size_t)size));
        CHECK(cudaIpcGetMemHandle(&h, p));
        xfer_all(sock, &h, sizeof h, 1);
    }
}

/* Another process's count allocations, opened here (one of them twice: the
 * same address, two references, closed twice), and this process's own
 * handle, which the driver refuses to open: count - 1 imports stay open.
 * They are the exporter's memory: imported, never this process's device
 * memory (which is leak_runtime's count allocations). */
NOINLINE static void import_ipc(void) {
    pid_t pid;
    int sock = exporter_start(export_ipc, &pid);
    cudaIpcMemHandle_t h[16];
    void *p[16];
    if (count > 16) exit(3);
    for (long i = 0; i < count; i++)
        xfer_all(sock, &h[i], sizeof h[i], 0);
    for (long i = 0; i < count; i++)
        CHECK(cudaIpcOpenMemHandle(&p[i], h[i], cudaIpcMemLazyEnablePeerAccess));
    void *again = NULL;
    CHECK(cudaIpcOpenMemHandle(&again, h[0], cudaIpcMemLazyEnablePeerAccess));
    if (again != p[0]) exit(5);
    void *mine, *opened = NULL;
    cudaIpcMemHandle_t own;
    CHECK(cudaMalloc(&mine, (size_t)size));
    CHECK(cudaIpcGetMemHandle(&own, mine));
    if (cudaIpcOpenMemHandle(&opened, own, cudaIpcMemLazyEnablePeerAccess) !=
        cudaErrorDeviceUninitialized)
        exit(6);
    CHECK(cudaFree(mine));
    CHECK(cudaIpcCloseMemHandle(p[0]));
    CHECK(cudaIpcCloseMemHandle(again));
    if (cudaIpcCloseMemHandle(p[0]) == cudaSuccess) exit(7); /* closed: the driver says no */
    exporter_stop(sock, pid);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "malloc";
    count = arg_long(argc, argv, 2, 3);
    size = arg_long(argc, argv, 3, 1 << 20);
    if (!strcmp(path, "entrypoint")) {
        leak_entrypoint();
    } else if (!strcmp(path, "vmm")) {
        leak_vmm();
    } else if (!strcmp(path, "ipc")) {
        import_ipc();
        leak_runtime("malloc");
    } else if (!strcmp(path, "unknown_free")) {
        int r = free_unknown();
        printf("free result %d\n", r);
    } else if (!strcmp(path, "oom")) {
        leak_oom();
    } else if (!strcmp(path, "reuse")) {
        leak_reuse();
    } else if (!strcmp(path, "threads")) {
        pthread_t t[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, leak_thread, NULL);
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
    } else {
        churn_runtime(path);
        leak_runtime(path);
    }
    return 0;
}
