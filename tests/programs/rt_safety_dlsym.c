/* SPDX-License-Identifier: Apache-2.0 */
/* Looks symbols up and loads libraries from several threads at once, while
 * allocating through what it found, through the runtime linked in, and
 * through the driver: leakwatch's dlsym hook, called from everywhere, must
 * never recurse or deadlock.
 *
 *   rt_safety_dlsym [ROUNDS]
 *
 * Each of 4 threads makes ROUNDS rounds; each round allocates 3 times and
 * frees 3 times. Then main leaks 1 allocation of 4096 bytes. */
#include "safety.h"

#include <pthread.h>

#define THREADS 4
static long rounds = 300;

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);
typedef CUresult (*drv_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*drv_free_fn)(CUdeviceptr);

static void *worker(void *arg) {
    (void)arg;
    for (long r = 0; r < rounds; r++) {
        /* Lookups that are not CUDA's, and RTLD_NEXT, pass straight through. */
        if (!dlsym(RTLD_DEFAULT, "strlen") || !dlsym(RTLD_NEXT, "malloc")) exit(3);
        if (dlsym(RTLD_DEFAULT, "cuNoSuchFunction_v9")) exit(4);
        void *rt = dlopen("libcudart.so", RTLD_NOW);
        void *drv = dlopen("libcuda.so.1", RTLD_NOW);
        if (!rt || !drv) exit(5);
        malloc_fn m = (malloc_fn)dlsym(rt, "cudaMalloc");
        free_fn f = (free_fn)dlsym(RTLD_DEFAULT, "cudaFree");
        drv_alloc_fn da = (drv_alloc_fn)dlsym(drv, "cuMemAlloc_v2");
        drv_free_fn df = (drv_free_fn)dlsym(drv, "cuMemFree_v2");
        if (!m || !f || !da || !df) exit(6);
        void *a, *b;
        CUdeviceptr d;
        CHECK(m(&a, 512));
        CHECK(cudaMalloc(&b, 1024));
        CHECK(da(&d, 2048));
        CHECK(df(d));
        CHECK(f(b));
        CHECK(cudaFree(a));
        dlclose(drv);
        dlclose(rt);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = arg_long(argc, argv, 1, rounds);
    CHECK(cudaFree(NULL)); /* the runtime initialises the driver (cuInit) */
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    void *p;
    CHECK(cudaMalloc(&p, 4096));
    printf("ok\n");
    return 0;
}
