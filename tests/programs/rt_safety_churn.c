/* SPDX-License-Identifier: Apache-2.0 */
/* A server that starts a thread per request: THREADS short-lived threads,
 * one after another, each allocating and freeing once. Prints its resident
 * size after the first 1000 threads and at the end:
 *
 *   rt_safety_churn [THREADS]
 *
 * prints "rss EARLY_KIB LATE_KIB". Memory per thread must be given back or
 * reused when the thread exits, so the two stay close. */
#include "safety.h"

#include <pthread.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    if (f) fclose(f);
    return kib;
}

static void *request(void *arg) {
    (void)arg;
    void *p;
    CHECK(cudaMalloc(&p, 4096));
    CHECK(cudaFree(p));
    return NULL;
}

int main(int argc, char **argv) {
    long threads = arg_long(argc, argv, 1, 100000);
    long early = 0;
    for (long i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, request, NULL) != 0) return 3;
        pthread_join(t, NULL);
        if (i == 999) early = rss_kib();
    }
    printf("rss %ld %ld\n", early, rss_kib());
    return 0;
}
