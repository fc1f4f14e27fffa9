/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime linked into the program (cudart_static, conda builds): no
 * runtime symbol can be interposed, only the driver path is visible.
 * Usage: static_paths PATH [COUNT [SIZE]] */
#include "paths.h"

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync_ptsz(void **p, size_t s, cudaStream_t st);
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t st);
cudaError_t cudaMallocManaged(void **p, size_t s, unsigned int flags);
cudaError_t cudaMallocHost(void **p, size_t s);
cudaError_t cudaFreeHost(void *p);

static long count, size;

NOINLINE static void leak_static(const char *path) {
    for (long i = 0; i < count; i++) {
        void *p;
        if (!strcmp(path, "malloc"))
            CHECK(cudaMalloc(&p, (size_t)size));
        else if (!strcmp(path, "async_ptsz"))
            CHECK(cudaMallocAsync_ptsz(&p, (size_t)size, NULL));
        else if (!strcmp(path, "managed"))
            CHECK(cudaMallocManaged(&p, (size_t)size, 1));
        else if (!strcmp(path, "host"))
            CHECK(cudaMallocHost(&p, (size_t)size));
        else {
            fprintf(stderr, "unknown path %s\n", path);
            exit(2);
        }
    }
}

NOINLINE static void churn_static(void) {
    for (int i = 0; i < 4; i++) {
        void *p;
        CHECK(cudaMalloc(&p, 4096));
        CHECK(cudaFree(p));
        CHECK(cudaMallocAsync_ptsz(&p, 4096, NULL));
        CHECK(cudaFreeAsync_ptsz(p, NULL));
        CHECK(cudaMallocHost(&p, 4096));
        CHECK(cudaFreeHost(p));
    }
}

NOINLINE static void oom_static(void) {
    void *p;
    printf("oom result %d\n", cudaMalloc(&p, (size_t)size));
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "malloc";
    count = arg_long(argc, argv, 2, 3);
    size = arg_long(argc, argv, 3, 1 << 20);
    if (!strcmp(path, "oom")) {
        oom_static();
        return 0;
    }
    churn_static();
    leak_static(path);
    return 0;
}
