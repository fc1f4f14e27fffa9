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

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, a_, b_);                                                               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
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
    CHECK_EQ(RT(h, "cudaGetDeviceCount")(&n), 0);
    CHECK_EQ(n, 2);

    enum { N = 1 << 20 };
    unsigned char *host = malloc(N), *back = malloc(N);
    CHECK_NONNULL(host);
    CHECK_NONNULL(back);
    for (int i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 7);
    void *dev = NULL;
    CHECK_EQ(RT(h, "cudaMalloc")(&dev, (size_t)N), 0);
    CHECK_EQ(RT(h, "cudaMemcpy")(dev, host, (size_t)N, 1 /* H2D */), 0);
    CHECK_EQ(RT(h, "cudaMemsetAsync")((char *)dev + 16, 0xab, (size_t)16, NULL), 0);
    CHECK_EQ(RT(h, "cudaMemcpyAsync")(back, dev, (size_t)N, 2 /* D2H */, NULL), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(back[i], i >= 16 && i < 32 ? 0xab : (unsigned char)(i * 7));

    struct {
        int type, device;
        void *dev, *host;
    } pa;
    CHECK_EQ(RT(h, "cudaPointerGetAttributes")(&pa, (char *)dev + 100), 0);
    CHECK_EQ(pa.type, 2); /* cudaMemoryTypeDevice */
    void *pinned = NULL;
    CHECK_EQ(RT(h, "cudaHostAlloc")(&pinned, (size_t)4096, 0), 0);
    CHECK_EQ(RT(h, "cudaPointerGetAttributes")(&pa, pinned), 0);
    CHECK_EQ(pa.type, 1); /* cudaMemoryTypeHost */
    CHECK_EQ(RT(h, "cudaFreeHost")(pinned), 0);
    CHECK_EQ(RT(h, "cudaPointerGetAttributes")(&pa, back), 0);
    CHECK_EQ(pa.type, 0); /* unregistered */
    CHECK_EQ(RT(h, "cudaFree")(dev), 0);

    /* CUDA 12.x driver_types.h offsets (CUDA 13's differ after maxGridSize). */
    unsigned char prop[1032];
    CHECK_EQ(RT(h, "cudaGetDeviceProperties_v2")(prop, 0), 0);
    int iv;
    size_t zv;
    memcpy(&zv, prop + 288, sizeof zv);
    CHECK_EQ(zv, 80ULL << 30); /* totalGlobalMem */
    memcpy(&iv, prop + 308, sizeof iv);
    CHECK_EQ(iv, 32); /* warpSize */
    memcpy(&iv, prop + 360, sizeof iv);
    CHECK_EQ(iv, 9); /* major */
    memcpy(&iv, prop + 364, sizeof iv);
    CHECK_EQ(iv, 0); /* minor */
    memcpy(&iv, prop + 388, sizeof iv);
    CHECK_EQ(iv, 132); /* multiProcessorCount */
    memcpy(&iv, prop + 624, sizeof iv);
    CHECK_EQ(iv, 2048); /* maxThreadsPerMultiProcessor */
    CHECK_EQ(RT(h, "cudaDeviceGetAttribute")(&iv, 39, 0), 0);
    CHECK_EQ(iv, 2048);

    void *stream = NULL, *e0 = NULL, *e1 = NULL, *graph = NULL, *exec = NULL;
    CHECK_EQ(RT(h, "cudaStreamCreate")(&stream), 0);
    CHECK_EQ(RT(h, "cudaEventCreate")(&e0), 0);
    CHECK_EQ(RT(h, "cudaEventCreate")(&e1), 0);
    CHECK_EQ(RT(h, "cudaEventRecord")(e0, stream), 0);
    CHECK_EQ(RT(h, "cudaEventRecord")(e1, stream), 0);
    float ms = -1;
    CHECK_EQ(RT(h, "cudaEventElapsedTime")(&ms, e0, e1), 0);
    CHECK(ms >= 0);
    CHECK_EQ(RT(h, "cudaStreamBeginCapture")(stream, 0), 0);
    int status = 0;
    CHECK_EQ(RT(h, "cudaStreamIsCapturing")(stream, &status), 0);
    CHECK_EQ(status, 1);
    /* Captured, not run: a launch and a copy become the graph's two nodes. */
    struct {
        unsigned x, y, z;
    } one = {1, 1, 1};
    int src = 7, dst = 0;
    CHECK_EQ(RT(h, "cudaLaunchKernel")((void *)main, one, one, NULL, (size_t)0, stream), 0);
    CHECK_EQ(RT(h, "cudaMemcpyAsync")(&dst, &src, sizeof src, 4, stream), 0);
    CHECK_EQ(dst, 0);
    CHECK_EQ(RT(h, "cudaStreamEndCapture")(stream, &graph), 0);
    size_t nodes = 0;
    CHECK_EQ(RT(h, "cudaGraphGetNodes")(graph, NULL, &nodes), 0);
    CHECK_EQ(nodes, 2);
    CHECK_EQ(RT(h, "cudaGraphInstantiate")(&exec, graph, 0ULL), 0);
    CHECK_EQ(RT(h, "cudaGraphLaunch")(exec, stream), 0);
    CHECK_EQ(RT(h, "cudaGraphExecDestroy")(exec), 0);
    CHECK_EQ(RT(h, "cudaGraphDestroy")(graph), 0);
    CHECK_EQ(RT(h, "cudaStreamSynchronize")(stream), 0);
    CHECK_EQ(RT(h, "cudaEventDestroy")(e0), 0);
    CHECK_EQ(RT(h, "cudaEventDestroy")(e1), 0);
    CHECK_EQ(RT(h, "cudaStreamDestroy")(stream), 0);

    void *pool = NULL;
    unsigned long long threshold = ~0ULL, got = 0;
    CHECK_EQ(RT(h, "cudaDeviceGetDefaultMemPool")(&pool, 0), 0);
    CHECK_EQ(RT(h, "cudaMemPoolSetAttribute")(pool, 4, &threshold), 0);
    CHECK_EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 4, &got), 0);
    CHECK_EQ(got, threshold);
    void *a = NULL;
    CHECK_EQ(RT(h, "cudaMallocAsync")(&a, (size_t)4096, NULL), 0);
    memset(a, 1, 4096); /* stream-ordered memory is usable too */
    /* What PyTorch's cudaMallocAsync backend reads as memory_allocated. */
    CHECK_EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 7 /* UsedMemCurrent */, &got), 0);
    CHECK_EQ(got, 4096);
    CHECK_EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 5 /* ReservedMemCurrent */, &got), 0);
    CHECK_EQ(got, 2 << 20);
    CHECK_EQ(RT(h, "cudaFreeAsync")(a, NULL), 0);
    CHECK_EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 7, &got), 0);
    CHECK_EQ(got, 0);
    CHECK_EQ(RT(h, "cudaMemPoolGetAttribute")(pool, 8 /* UsedMemHigh */, &got), 0);
    CHECK_EQ(got, 4096);
    free(host);
    free(back);
    dlclose(h);
}

/* Every nn.Linear of PyTorch: a cuBLAS handle, and one cuBLASLt algorithm. */
static void cublas_stand_ins(void) {
    void *b = open_lib("libcublas.so.12");
    void *handle = NULL;
    int mode = -1;
    CHECK_EQ(((rt_fn)dlvsym(b, "cublasCreate_v2", "libcublas.so.12"))(&handle), 0);
    CHECK_NONNULL(handle);
    CHECK_EQ(((rt_fn)dlvsym(b, "cublasSetMathMode", "libcublas.so.12"))(handle, 3), 0);
    CHECK_EQ(((rt_fn)dlvsym(b, "cublasGetMathMode", "libcublas.so.12"))(handle, &mode), 0);
    CHECK_EQ(mode, 3);
    CHECK_EQ(((rt_fn)dlvsym(b, "cublasSgemm_v2", "libcublas.so.12"))(), 0);
    CHECK_EQ(((rt_fn)dlvsym(b, "cublasDestroy_v2", "libcublas.so.12"))(handle), 0);
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
    CHECK_EQ(((rt_fn)dlvsym(lt, "cublasLtMatmulAlgoGetHeuristic", "libcublasLt.so.12"))(
                 NULL, NULL, NULL, NULL, NULL, NULL, NULL, 4, results, &returned),
             0);
    CHECK_EQ(returned, 1);
    CHECK_EQ(results[0].state, 0);
    CHECK_EQ(results[0].workspace, 0);
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
