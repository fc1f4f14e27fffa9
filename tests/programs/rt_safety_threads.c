/* SPDX-License-Identifier: Apache-2.0 */
/* Sixteen threads allocate and free at once while another asks for a report
 * again and again (leakwatch_dump) and the sampler runs (the test sets
 * LEAKWATCH_INTERVAL_MS=10).
 *
 *   rt_safety_threads [ROUNDS]
 *
 * Each thread makes ROUNDS rounds of 8 allocations and 8 frees, then leaks
 * 2 allocations of 4096 bytes from leak_thread. */
#include "safety.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 16
static long rounds = 2000;
static atomic_int done;

NOINLINE static void leak_thread(void) {
    void *p;
    for (int i = 0; i < 2; i++)
        CHECK(cudaMalloc(&p, 4096));
}

static void *worker(void *arg) {
    size_t base = 256 * (1 + (size_t)(uintptr_t)arg);
    for (long r = 0; r < rounds; r++) {
        void *p[8];
        for (int i = 0; i < 8; i++)
            CHECK(cudaMalloc(&p[i], base + (size_t)i));
        for (int i = 7; i >= 0; i--)
            CHECK(cudaFree(p[i]));
    }
    leak_thread();
    atomic_fetch_add(&done, 1);
    return NULL;
}

static void *dumper(void *arg) {
    (void)arg;
    while (atomic_load(&done) < THREADS)
        lw_call("leakwatch_dump");
    return NULL;
}

int main(int argc, char **argv) {
    rounds = arg_long(argc, argv, 1, rounds);
    void *first;
    CHECK(cudaMalloc(&first, 4096)); /* leakwatch starts here, before the dumper */
    CHECK(cudaFree(first));
    pthread_t t[THREADS + 1];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_create(&t[THREADS], NULL, dumper, NULL);
    for (int i = 0; i <= THREADS; i++)
        pthread_join(t[i], NULL);
    printf("ok\n");
    return 0;
}
