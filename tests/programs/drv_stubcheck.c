/* SPDX-License-Identifier: Apache-2.0 */
/* Self-check of the stand-in driver (build/tests/lib/libcuda.so.1), linked
 * directly as driver-API programs are, without leakwatch. Exit 0 when every
 * check passes; each failure is printed. Honours FAKE_CUDA_DEVICES and
 * FAKE_CUDA_MEM_BYTES (at least 2 devices and 1 GiB expected). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../stubs/fake_common.h"

#include "checks.h"

#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

static int n_devices;
static size_t limit;

static CUcontext ctx_of(int dev) {
    CUcontext c = NULL;
    EQ(cuDevicePrimaryCtxRetain(&c, dev), CUDA_SUCCESS);
    return c;
}

static void check_before_init(void) {
    CUdeviceptr d = 0;
    int v = 0, n = 0;
    EQ(cuMemAlloc_v2(&d, 1024), CUDA_ERROR_NOT_INITIALIZED);
    EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    EQ(cuDriverGetVersion(&v), CUDA_SUCCESS); /* no cuInit needed */
    EQ(v, FAKE_DRIVER_VERSION);
    void *fn = NULL;
    EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 3020, 0, NULL), CUDA_SUCCESS);
    CHECK(fn != NULL && fn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    EQ(cuInit(0), CUDA_SUCCESS);
    EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
    EQ(n, n_devices);
    CUdevice dev = -1;
    EQ(cuDeviceGet(&dev, n_devices - 1), CUDA_SUCCESS);
    EQ(dev, n_devices - 1);
    EQ(cuDeviceGet(&dev, n_devices), CUDA_ERROR_INVALID_DEVICE);
}

static void check_contexts(void) {
    CUcontext c = (CUcontext)1;
    CUdevice dev = -1;
    CUdeviceptr d = 0;
    EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == NULL);
    EQ(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    EQ(cuMemAlloc_v2(&d, 1024), CUDA_ERROR_INVALID_CONTEXT);
    EQ(cuCtxSetCurrent((CUcontext)(uintptr_t)0xdead0000), CUDA_ERROR_INVALID_CONTEXT);
    EQ(cuDevicePrimaryCtxRetain(&c, n_devices), CUDA_ERROR_INVALID_DEVICE);

    EQ(cuCtxSetCurrent(ctx_of(1)), CUDA_SUCCESS);
    EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    EQ(dev, 1);
    EQ(cuCtxGetDevice_v2(&dev, ctx_of(0)), CUDA_SUCCESS);
    EQ(dev, 0);
    EQ(cuCtxGetDevice_v2(&dev, NULL), CUDA_SUCCESS); /* NULL: the current one */
    EQ(dev, 1);
    EQ(cuCtxSetCurrent(ctx_of(0)), CUDA_SUCCESS);
    EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
    CHECK(c == ctx_of(0));
    EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

static void check_alloc_free(void) {
    size_t base = fake_cuda_used_bytes(0);
    unsigned long allocs = fake_cuda_calls("cuMemAlloc_v2");
    CUdeviceptr a = 0, b = 0, c = 0;
    EQ(cuMemAlloc_v2(&a, 1000), CUDA_SUCCESS);
    CHECK(a != 0 && a % 512 == 0);
    EQ(fake_cuda_used_bytes(0), base + 1024);
    EQ(fake_cuda_live_allocations(), 1);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(0), base);
    EQ(cuMemAlloc_v2(&b, 1000), CUDA_SUCCESS);
    EQ(b, a); /* same rounded size: the freed address comes back */
    EQ(cuMemAlloc_v2(&c, 1000), CUDA_SUCCESS);
    CHECK(c != b);
    EQ(cuMemFree_v2(c), CUDA_SUCCESS);
    EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    EQ(cuMemFree_v2(b), CUDA_ERROR_INVALID_VALUE);       /* double free */
    EQ(cuMemFree_v2(b + 512), CUDA_ERROR_INVALID_VALUE); /* not an allocation's start */
    EQ(cuMemFree_v2(0x1234), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemFree_v2(0), CUDA_SUCCESS);
    EQ(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_calls("cuMemAlloc_v2"), allocs + 5);
    EQ(fake_cuda_calls("cuMemFree_v2"), 7);
    EQ(fake_cuda_calls("noSuchEntryPoint"), 0);
    EQ(fake_cuda_live_allocations(), 0);

    /* Several GiB, none of it real; the limit is per device. */
    size_t free_b = 0, total = 0;
    EQ(cuMemGetInfo_v2(&free_b, &total), CUDA_SUCCESS);
    EQ(total, limit);
    EQ(free_b, limit - base);
    EQ(cuMemAlloc_v2(&a, limit / 2), CUDA_SUCCESS);
    EQ(cuMemAlloc_v2(&b, limit / 2 + 512), CUDA_ERROR_OUT_OF_MEMORY);
    EQ(cuMemGetInfo_v2(&free_b, &total), CUDA_SUCCESS);
    EQ(free_b, limit - limit / 2);
    EQ(cuCtxSetCurrent(ctx_of(1)), CUDA_SUCCESS);
    size_t base1 = fake_cuda_used_bytes(1);
    EQ(cuMemAlloc_v2(&b, limit / 2 + 512), CUDA_SUCCESS); /* device 1 has room */
    EQ(fake_cuda_used_bytes(1), base1 + limit / 2 + 512);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS); /* freeing from another device's context works */
    EQ(cuMemFree_v2(b), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(1), base1);
    EQ(cuCtxSetCurrent(ctx_of(0)), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(0), base);

    /* v1: 32-bit pointers. */
    CUdeviceptr_v1 v1 = 0;
    EQ(cuMemAlloc(&v1, 4096), CUDA_SUCCESS);
    CHECK(v1 != 0);
    EQ(fake_cuda_used_bytes(0), base + 4096);
    EQ(cuMemFree(v1), CUDA_SUCCESS);
    EQ(cuMemFree(v1), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAlloc(&v1, 4096), CUDA_SUCCESS);
    EQ(cuMemFree_v2((CUdeviceptr)v1), CUDA_SUCCESS); /* the same allocation to _v2 */
    unsigned int f32 = 0, t32 = 0;
    EQ(cuMemGetInfo(&f32, &t32), CUDA_SUCCESS);
    CHECK(t32 > 0);

    size_t pitch = 0;
    EQ(cuMemAllocPitch_v2(&a, &pitch, 1000, 3, 4), CUDA_SUCCESS);
    EQ(pitch, 1024);
    EQ(fake_cuda_used_bytes(0), base + 3072);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    EQ(cuMemAllocPitch_v2(&a, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);

    EQ(cuMemAllocManaged(&a, 8192, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(0), base + 8192);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS);
    EQ(cuMemAllocManaged(&a, 8192, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);

    /* Stream-ordered, plain and per-thread: separate entry points, same memory. */
    CUstream s = (CUstream)(uintptr_t)0x2; /* CU_STREAM_PER_THREAD */
    EQ(cuMemAllocAsync(&a, 4096, NULL), CUDA_SUCCESS);
    EQ(cuMemAllocAsync_ptsz(&b, 4096, s), CUDA_SUCCESS);
    CHECK(a != b);
    EQ(fake_cuda_used_bytes(0), base + 8192);
    EQ(cuMemFreeAsync_ptsz(a, s), CUDA_SUCCESS);
    EQ(cuMemFreeAsync(b, NULL), CUDA_SUCCESS);
    EQ(cuMemFreeAsync(b, NULL), CUDA_ERROR_INVALID_VALUE);
    CUmemoryPool pool = (CUmemoryPool)(uintptr_t)0x10;
    EQ(cuMemAllocFromPoolAsync(&a, 4096, pool, NULL), CUDA_SUCCESS);
    EQ(cuMemAllocFromPoolAsync_ptsz(&b, 4096, pool, s), CUDA_SUCCESS);
    EQ(cuMemFree_v2(a), CUDA_SUCCESS); /* cuMemFree takes pool memory too */
    EQ(cuMemFreeAsync(b, NULL), CUDA_SUCCESS);
    EQ(cuMemAllocFromPoolAsync(&a, 4096, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_calls("cuMemAllocAsync"), 1);
    EQ(fake_cuda_calls("cuMemAllocAsync_ptsz"), 1);
    EQ(fake_cuda_calls("cuMemFreeAsync"), 3);
    EQ(fake_cuda_calls("cuMemFreeAsync_ptsz"), 1);
    EQ(fake_cuda_calls("cuMemAllocFromPoolAsync"), 2);
    EQ(fake_cuda_calls("cuMemAllocFromPoolAsync_ptsz"), 1);
    EQ(fake_cuda_used_bytes(0), base);
}

static void check_host(void) {
    size_t base = fake_cuda_used_bytes(0);
    void *h = NULL, *g = NULL;
    EQ(cuMemHostAlloc(&h, 1 << 20, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
    CHECK(h != NULL);
    if (h != NULL) memset(h, 0x5a, 1 << 20); /* real memory */
    EQ(cuMemAllocHost_v2(&g, 64), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(0), base); /* pinned host memory is not device memory */
    EQ(cuMemFreeHost(h), CUDA_SUCCESS);
    EQ(cuMemFreeHost(g), CUDA_SUCCESS);
    EQ(cuMemFreeHost(g), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemHostAlloc(&h, 64, 0x40), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAllocHost_v2(&h, 0), CUDA_ERROR_INVALID_VALUE);
}

static void check_vmm(void) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    size_t gran = 0;
    EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    EQ(gran, 2 * MIB);

    size_t base1 = fake_cuda_used_bytes(1);
    CUmemGenericAllocationHandle h1 = 0, h2 = 0, bad = 0;
    EQ(cuMemCreate(&h1, 2 * gran, &prop, 0), CUDA_SUCCESS);
    EQ(cuMemCreate(&h2, gran, &prop, 0), CUDA_SUCCESS);
    CHECK(h1 != 0 && h2 != 0 && h1 != h2);
    EQ(fake_cuda_used_bytes(1), base1 + 3 * gran);
    EQ(cuMemCreate(&bad, gran + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemCreate(&bad, gran, &prop, 1), CUDA_ERROR_INVALID_VALUE);
    prop.location.id = n_devices;
    EQ(cuMemCreate(&bad, gran, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
    prop.location.id = 1;
    EQ(cuMemCreate(&bad, (limit / gran + 1) * gran, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

    CUdeviceptr va = 0, va2 = 0;
    EQ(cuMemAddressReserve(&va, 8 * gran, 0, 0, 0), CUDA_SUCCESS);
    CHECK(va != 0 && va % gran == 0);
    /* A hint right after the reservation is honoured, to grow it. */
    EQ(cuMemAddressReserve(&va2, 4 * gran, 0, va + 8 * gran, 0), CUDA_SUCCESS);
    EQ(va2, va + 8 * gran);
    EQ(cuMemAddressReserve(&va2, 4096 + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAddressReserve(&va2, 4096, 3, 0, 0), CUDA_ERROR_INVALID_VALUE);

    EQ(cuMemMap(va, 2 * gran, 0, h1, 0), CUDA_SUCCESS);
    EQ(cuMemMap(va + 2 * gran, gran, 0, h2, 0), CUDA_SUCCESS);
    EQ(cuMemMap(va + gran, gran, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);         /* already mapped */
    EQ(cuMemMap(va + 4 * gran, 2 * gran, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* too big */
    EQ(cuMemMap(va + 7 * gran, 2 * gran, 0, h1, 0), CUDA_ERROR_INVALID_VALUE); /* crosses */
    EQ(cuMemMap(0x1000000, gran, 0, h1, 0), CUDA_ERROR_INVALID_VALUE);         /* not reserved */

    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 1;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EQ(cuMemSetAccess(va, 3 * gran, &acc, 1), CUDA_SUCCESS);
    EQ(cuMemSetAccess(va, 4 * gran, &acc, 1), CUDA_ERROR_INVALID_VALUE); /* partly unmapped */
    EQ(cuMemSetAccess(va, gran, NULL, 1), CUDA_ERROR_INVALID_VALUE);

    /* Released while mapped: the memory stays until unmapped. */
    EQ(cuMemRelease(h1), CUDA_SUCCESS);
    EQ(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_used_bytes(1), base1 + 3 * gran);
    /* Host registration: no overlap with a registered range; unregistered by
     * the pointer that was registered. */
    static char mine[3 * 4096];
    EQ(cuMemHostRegister_v2(mine, 2 * 4096, 0), CUDA_SUCCESS);
    EQ(cuMemHostRegister_v2(mine + 4096, 2 * 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EQ(cuMemHostUnregister(mine + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EQ(cuMemHostUnregister(mine), CUDA_SUCCESS);
    EQ(cuMemHostUnregister(mine), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EQ(cuMemHostRegister_v2(NULL, 4096, 0), CUDA_ERROR_INVALID_VALUE);
    /* A mapped address gives its handle back with one more reference, even
     * after the handle's own release (NCCL's free does this). */
    CUmemGenericAllocationHandle again = 0;
    EQ(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 4096)), CUDA_SUCCESS);
    EQ(again, h1);
    EQ(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 5 * gran)),
       CUDA_ERROR_INVALID_VALUE); /* not mapped */
    EQ(cuMemRetainAllocationHandle(NULL, (void *)(uintptr_t)va), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemRelease(again), CUDA_SUCCESS);
    EQ(cuMemRelease(again), CUDA_ERROR_INVALID_VALUE);
    EQ(fake_cuda_used_bytes(1), base1 + 3 * gran);
    EQ(cuMemAddressFree(va, 8 * gran), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    EQ(cuMemUnmap(va, gran), CUDA_ERROR_INVALID_VALUE);           /* part of a mapping */
    EQ(cuMemUnmap(va, 2 * gran), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(1), base1 + gran);
    EQ(cuMemUnmap(va, 2 * gran), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemUnmap(va + 2 * gran, gran), CUDA_SUCCESS);
    EQ(cuMemRelease(h2), CUDA_SUCCESS);
    EQ(fake_cuda_used_bytes(1), base1);
    EQ(cuMemRelease(12345678), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAddressFree(va, 4 * gran), CUDA_ERROR_INVALID_VALUE); /* wrong size */
    EQ(cuMemAddressFree(va, 8 * gran), CUDA_SUCCESS);
    EQ(cuMemAddressFree(va, 8 * gran), CUDA_ERROR_INVALID_VALUE);
    EQ(cuMemAddressFree(va2, 4 * gran), CUDA_SUCCESS);
}

static void check_get_proc_address(void) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    /* Expected: the library's own export of that versioned name. */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    if (lib == NULL) return;
    const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    const cuuint64_t ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    struct {
        const char *name;
        int version;
        cuuint64_t flags;
        const char *expect;
    } cases[] = {
        {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
        {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
        {"cuMemAlloc", 3010, 0, "cuMemAlloc"},
        {"cuMemFree", 3020, 0, "cuMemFree_v2"},
        {"cuMemFree", 2000, 0, "cuMemFree"},
        {"cuMemAllocHost", 3020, 0, "cuMemAllocHost_v2"},
        {"cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2"},
        {"cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2"},
        {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
        {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
        {"cuGetProcAddress", 11999, 0, "cuGetProcAddress"},
        {"cuMemAllocAsync", 11020, 0, "cuMemAllocAsync"},
        {"cuMemAllocAsync", 11020, legacy, "cuMemAllocAsync"},
        {"cuMemAllocAsync", 12000, ptds, "cuMemAllocAsync_ptsz"},
        {"cuMemFreeAsync", 11020, ptds, "cuMemFreeAsync_ptsz"},
        {"cuMemFreeAsync", 11020, 0, "cuMemFreeAsync"},
        {"cuMemAllocFromPoolAsync", 11020, ptds, "cuMemAllocFromPoolAsync_ptsz"},
        {"cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync"},
        /* No _ptsz variant: per-thread gives the plain one. */
        {"cuMemAlloc", 3020, ptds, "cuMemAlloc_v2"},
        {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
        {"cuCtxGetDevice", 12080, 0, "cuCtxGetDevice"},
        {"cuMemCreate", 10020, 0, "cuMemCreate"},
        {"cuMemMap", 12000, 0, "cuMemMap"},
        {"cuMemHostAlloc", 2020, 0, "cuMemHostAlloc"},
        {"cuMemFreeHost", 2000, 0, "cuMemFreeHost"},
        {"cuMemAllocManaged", 6000, 0, "cuMemAllocManaged"},
        {"cuGetExportTable", 3000, 0, "cuGetExportTable"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        void *expect = dlsym(lib, cases[i].expect);
        CHECK(expect != NULL);
        fn = (void *)1;
        st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult r = cuGetProcAddress_v2(cases[i].name, &fn, cases[i].version, cases[i].flags, &st);
        if (r != CUDA_SUCCESS || fn != expect || st != CU_GET_PROC_ADDRESS_SUCCESS) {
            fprintf(stderr, "cuGetProcAddress_v2(%s, %d, %llu): r=%d fn=%p st=%d, want %s\n",
                    cases[i].name, cases[i].version, cases[i].flags, r, fn, (int)st,
                    cases[i].expect);
            failures++;
        }
        fn = (void *)1;
        r = cuGetProcAddress(cases[i].name, &fn, cases[i].version, cases[i].flags);
        if (r != CUDA_SUCCESS || fn != expect) {
            fprintf(stderr, "cuGetProcAddress(%s, %d, %llu): r=%d fn=%p, want %s\n", cases[i].name,
                    cases[i].version, cases[i].flags, r, fn, cases[i].expect);
            failures++;
        }
    }
    dlclose(lib);
    /* Older than the symbol: success, NULL, "version not sufficient". */
    fn = (void *)1;
    EQ(cuGetProcAddress_v2("cuMemAllocAsync", &fn, 11010, 0, &st), CUDA_SUCCESS);
    CHECK(fn == NULL);
    EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EQ(cuGetProcAddress_v2("cuGetProcAddress", &fn, 11020, 0, &st), CUDA_SUCCESS);
    CHECK(fn == NULL);
    EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    /* Unknown, or a versioned name: success, NULL, "not found". */
    fn = (void *)1;
    EQ(cuGetProcAddress_v2("cuMemAlloc_v2", &fn, 13000, 0, &st), CUDA_SUCCESS);
    CHECK(fn == NULL);
    EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EQ(cuGetProcAddress_v2("cudnnCreate", &fn, 13000, 0, NULL), CUDA_SUCCESS);
    CHECK(fn == NULL);
    /* Invalid arguments, or a version newer than the driver. */
    EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, FAKE_DRIVER_VERSION + 10, 0, &st),
       CUDA_ERROR_INVALID_VALUE);
    EQ(cuGetProcAddress_v2("cuMemAlloc", NULL, 3020, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EQ(cuGetProcAddress_v2(NULL, &fn, 3020, 0, &st), CUDA_ERROR_INVALID_VALUE);
    EQ(cuGetProcAddress_v2("cuMemAlloc", &fn, 3020, 4, &st), CUDA_ERROR_INVALID_VALUE);

    /* The stand-in runtime's table is given; any other (the real runtime's)
     * is refused, so that the real runtime fails its start cleanly here. */
    const void *table = NULL;
    static const CUuuid stand_in = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87,
                                     0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9}};
    EQ(cuGetExportTable(&table, &stand_in), CUDA_SUCCESS);
    CHECK(table != NULL);
    CUuuid id;
    memset(&id, 7, sizeof id);
    EQ(cuGetExportTable(&table, &id), CUDA_ERROR_INVALID_VALUE);
    CHECK(table == NULL);
    EQ(cuGetExportTable(&table, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* 16 threads: each needs its own current context, then allocates and frees
 * concurrently; live addresses never collide and usage returns to zero. */
#define THREADS 16
#define LIVE 8
static pthread_barrier_t barrier;
static CUdeviceptr live[THREADS][LIVE];
static atomic_int thread_errors;

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    unsigned seed = 777u + (unsigned)id;
    CUdeviceptr d = 0;
    if (cuMemAlloc_v2(&d, 64) != CUDA_ERROR_INVALID_CONTEXT) /* new thread: no context */
        atomic_fetch_add(&thread_errors, 1);
    CUcontext c = NULL;
    if (cuDevicePrimaryCtxRetain(&c, id % 2) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS)
        atomic_fetch_add(&thread_errors, 1);
    for (int i = 0; i < LIVE; i++) {
        if (cuMemAlloc_v2(&live[id][i], 1 + rand_r(&seed) % (4 << 20)) != CUDA_SUCCESS)
            atomic_fetch_add(&thread_errors, 1);
    }
    pthread_barrier_wait(&barrier);
    pthread_barrier_wait(&barrier);
    for (int iter = 0; iter < 2000; iter++) {
        int k = rand_r(&seed) % LIVE;
        size_t size = (size_t)(1 + rand_r(&seed) % 64) * 512;
        CUresult r1 = iter % 2 ? cuMemFreeAsync_ptsz(live[id][k], NULL) : cuMemFree_v2(live[id][k]);
        CUresult r2 = iter % 3 ? cuMemAlloc_v2(&live[id][k], size)
                               : cuMemAllocAsync_ptsz(&live[id][k], size, NULL);
        if (r1 != CUDA_SUCCESS || r2 != CUDA_SUCCESS) atomic_fetch_add(&thread_errors, 1);
    }
    for (int i = 0; i < LIVE; i++) {
        if (cuMemFree_v2(live[id][i]) != CUDA_SUCCESS) atomic_fetch_add(&thread_errors, 1);
    }
    return NULL;
}

static int cmp_dptr(const void *a, const void *b) {
    CUdeviceptr x = *(const CUdeviceptr *)a, y = *(const CUdeviceptr *)b;
    return x < y ? -1 : x > y;
}

static void check_threads(void) {
    size_t base0 = fake_cuda_used_bytes(0), base1 = fake_cuda_used_bytes(1);
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    pthread_barrier_wait(&barrier);
    CUdeviceptr all[THREADS * LIVE];
    memcpy(all, live, sizeof all);
    qsort(all, THREADS * LIVE, sizeof all[0], cmp_dptr);
    for (int i = 1; i < THREADS * LIVE; i++)
        CHECK(all[i] != all[i - 1]);
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    EQ(atomic_load(&thread_errors), 0);
    EQ(fake_cuda_used_bytes(0), base0);
    EQ(fake_cuda_used_bytes(1), base1);
    EQ(fake_cuda_live_allocations(), 0);
}

int main(void) {
    const char *nd = getenv("FAKE_CUDA_DEVICES");
    n_devices = nd != NULL && *nd != '\0' ? atoi(nd) : FAKE_DEFAULT_DEVICES;
    limit = FAKE_DEFAULT_MEM_BYTES;
    const char *mb = getenv("FAKE_CUDA_MEM_BYTES");
    if (mb != NULL && *mb != '\0') {
        char *end = NULL;
        limit = strtoull(mb, &end, 10);
        if (*end == 'G')
            limit <<= 30;
        else if (*end == 'M')
            limit <<= 20;
    }
    if (n_devices < 2 || limit < GIB) {
        fprintf(stderr, "drv_stubcheck: needs 2+ devices and 1+ GiB\n");
        return 2;
    }
    check_before_init();
    check_contexts();
    check_alloc_free();
    check_host();
    check_vmm();
    check_get_proc_address();
    check_threads();
    if (failures != 0) fprintf(stderr, "drv_stubcheck: %d check(s) failed\n", failures);
    return failures != 0;
}
