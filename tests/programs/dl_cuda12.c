/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA 12 stand-ins as real PyTorch uses them (run by tests/unit/
 * test_stubs.c, without the shim, LD_LIBRARY_PATH=$LW_BUILD/tests/lib):
 * libcudart.so.12 on the stand-in driver, device memory that copies and
 * memsets really reach, CUDA 12's cudaDeviceProp at the offsets PyTorch
 * reads, streams, events, capture, pools and pointer attributes; a cuBLAS
 * handle and one cuBLASLt algorithm. Exits 0 when everything holds. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#define CHECK_NONNULL(p) CHECK((p) != NULL)

int main(void);

static void *open_lib(const char *soname) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    return h;
}

/* Called with each function's own arguments: no prototype. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
typedef int (*rt_fn)();
#pragma GCC diagnostic pop
#define RT(h, name) ((rt_fn)dlvsym(h, name, "libcudart.so.12"))

/* The runtime on the driver: device memory is host memory that copies and
 * memsets really reach; CUDA 12's cudaDeviceProp layout at the offsets real
 * PyTorch reads; streams, events, capture, pools and pointer attributes. */
static void runtime_behaviour(void) {
    void *h = open_lib("libcudart.so.12");
    int n = 0;
    EQ(RT(h, "cudaGetDeviceCount")(&n), 0);
    EQ(n, 2);

    enum { N = 1 << 20 };
    unsigned char *host = malloc(N), *back = malloc(N);
    CHECK_NONNULL(host);
    CHECK_NONNULL(back);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7);
    void *dev = NULL;
    EQ(RT(h, "cudaMalloc")(&dev, (size_t)N), 0);
    EQ(RT(h, "cudaMemcpy")(dev, host, (size_t)N, 1 /* H2D */), 0);
    EQ(RT(h, "cudaMemsetAsync")((char *)dev + 16, 0xab, (size_t)16, NULL), 0);
    EQ(RT(h, "cudaMemcpyAsync")(back, dev, (size_t)N, 2 /* D2H */, NULL), 0);
    for (int i = 0; i < N; i++)
        EQ(back[i], i >= 16 && i < 32 ? 0xab : (unsigned char)(i * 7));

    struct {
        int type, device;
        void *dev, *host;
    } pa;
    EQ(RT(h, "cudaPointerGetAttributes")(&pa, (char *)dev + 100), 0);
    EQ(pa.type, 2); /* cudaMemoryTypeDevice */
    void *pinned = NULL;
    EQ(RT(h, "cudaHostAlloc")(&pinned, (size_t)4096, 0), 0);
    EQ(RT(h, "cudaPointerGetAttributes")(&pa, pinned), 0);
    EQ(pa.type, 1); /* cudaMemoryTypeHost */
    EQ(RT(h, "cudaFreeHost")(pinned), 0);
    EQ(RT(h, "cudaPointerGetAttributes")(&pa, back), 0);
    EQ(pa.type, 0); /* unregistered */
    EQ(RT(h, "cudaFree")(dev), 0);

    /* CUDA 12.x driver_types.h offsets (CUDA 13's differ after maxGridSize). */
    unsigned char prop[1032];
    EQ(RT(h, "cudaGetDeviceProperties_v2")(prop, 0), 0);
    int iv;
    size_t zv;
    memcpy(&zv, prop + 288, sizeof zv);
    EQ(zv, 80ULL << 30); /* totalGlobalMem */
    memcpy(&iv, prop + 308, sizeof iv);
    EQ(iv, 32); /* warpSize */
    memcpy(&iv, prop + 360, sizeof iv);
    EQ(iv, 9); /* major */
    memcpy(&iv, prop + 364, sizeof iv);
    EQ(iv, 0); /* minor */
    memcpy(&iv, prop + 388, sizeof iv);
    EQ(iv, 132); /* multiProcessorCount */
    memcpy(&iv, prop + 624, sizeof iv);
    EQ(iv, 2048); /* maxThreadsPerMultiProcessor */
    EQ(RT(h, "cudaDeviceGetAttribute")(&iv, 39, 0), 0);
    EQ(iv, 2048);

    void *stream = NULL, *e0 = NULL, *e1 = NULL, *graph = NULL, *exec = NULL;
    EQ(RT(h, "cudaStreamCreate")(&stream), 0);
    EQ(RT(h, "cudaEventCreate")(&e0), 0);
    EQ(RT(h, "cudaEventCreate")(&e1), 0);
    EQ(RT(h, "cudaEventRecord")(e0, stream), 0);
    EQ(RT(h, "cudaEventRecord")(e1, stream), 0);
    float ms = -1;
    EQ(RT(h, "cudaEventElapsedTime")(&ms, e0, e1), 0);
    CHECK(ms >= 0);
    EQ(RT(h, "cudaStreamBeginCapture")(stream, 0), 0);
    int status = 0;
    EQ(RT(h, "cudaStreamIsCapturing")(stream, &status), 0);
    EQ(status, 1);
    /* Captured, not run: a launch and a copy become the graph's two nodes. */
    struct {
        unsigned x, y, z;
    } one = {1, 1, 1};
    int src = 7, dst = 0;
    EQ(RT(h, "cudaLaunchKernel")((void *)main, one, one, NULL, (size_t)0, stream), 0);
    EQ(RT(h, "cudaMemcpyAsync")(&dst, &src, sizeof src, 4, stream), 0);
    EQ(dst, 0);
    EQ(RT(h, "cudaStreamEndCapture")(stream, &graph), 0);
    size_t nodes = 0;
    EQ(RT(h, "cudaGraphGetNodes")(graph, NULL, &nodes), 0);
    EQ(nodes, 2);
    EQ(RT(h, "cudaGraphInstantiate")(&exec, graph, 0ULL), 0);
    EQ(RT(h, "cudaGraphLaunch")(exec, stream), 0);
    EQ(RT(h, "cudaGraphExecDestroy")(exec), 0);
    EQ(RT(h, "cudaGraphDestroy")(graph), 0);
    EQ(RT(h, "cudaStreamSynchronize")(stream), 0);
    EQ(RT(h, "cudaEventDestroy")(e0), 0);
    EQ(RT(h, "cudaEventDestroy")(e1), 0);
    EQ(RT(h, "cudaStreamDestroy")(stream), 0);

    void *pool = NULL;
    unsigned long long threshold = ~0ULL, got = 0;
    EQ(RT(h, "cudaDeviceGetDefaultMemPool")(&pool, 0), 0);
    EQ(RT(h, "cudaMemPoolSetAttribute")(pool, 4, &threshold), 0);
    EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 4, &got), 0);
    EQ(got, threshold);
    void *a = NULL;
    EQ(RT(h, "cudaMallocAsync")(&a, (size_t)4096, NULL), 0);
    memset(a, 1, 4096); /* stream-ordered memory is usable too */
    /* What PyTorch's cudaMallocAsync backend reads as memory_allocated. */
    EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 7 /* UsedMemCurrent */, &got), 0);
    EQ(got, 4096);
    EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 5 /* ReservedMemCurrent */, &got), 0);
    EQ(got, 2 << 20);
    EQ(RT(h, "cudaFreeAsync")(a, NULL), 0);
    EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 7, &got), 0);
    EQ(got, 0);
    EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 8 /* UsedMemHigh */, &got), 0);
    EQ(got, 4096);
    free(host);
    free(back);
    dlclose(h);
}

/* Every nn.Linear of PyTorch: a cuBLAS handle, and one cuBLASLt algorithm. */
static void cublas_stand_ins(void) {
    void *b = open_lib("libcublas.so.12");
    void *handle = NULL;
    int mode = -1;
    EQ(((rt_fn)dlvsym(b, "cublasCreate_v2", "libcublas.so.12"))(&handle), 0);
    CHECK_NONNULL(handle);
    EQ(((rt_fn)dlvsym(b, "cublasSetMathMode", "libcublas.so.12"))(handle, 3), 0);
    EQ(((rt_fn)dlvsym(b, "cublasGetMathMode", "libcublas.so.12"))(handle, &mode), 0);
    EQ(mode, 3);
    EQ(((rt_fn)dlvsym(b, "cublasSgemm_v2", "libcublas.so.12"))(), 0);
    EQ(((rt_fn)dlvsym(b, "cublasDestroy_v2", "libcublas.so.12"))(handle), 0);
    dlclose(b);

    void *lt = open_lib("libcublasLt.so.12");
    struct {
        unsigned long long algo[8];
        size_t workspace;
        int state;
        float waves;
        int reserved[4];
    } results[4];
    int returned = 0;
    EQ(((rt_fn)dlvsym(lt, "cublasLtMatmulAlgoGetHeuristic", "libcublasLt.so.12"))(
           NULL, NULL, NULL, NULL, NULL, NULL, NULL, 4, results, &returned),
       0);
    EQ(returned, 1);
    EQ(results[0].state, 0);
    EQ(results[0].workspace, 0);
    dlclose(lt);
}

int main(void) {
    const char *no_reserve = getenv("FAKE_CUDA_NO_RESERVE");
    if (no_reserve != NULL && strcmp(no_reserve, "1") == 0) {
        /* Device addresses are plain numbers then (make check-aarch64). */
        printf("dl_cuda12: skipped (FAKE_CUDA_NO_RESERVE=1: device memory is not host memory)\n");
        return 0;
    }
    runtime_behaviour();
    cublas_stand_ins();
    if (failures == 0) printf("dl_cuda12: ok\n");
    return failures == 0 ? 0 : 1;
}
