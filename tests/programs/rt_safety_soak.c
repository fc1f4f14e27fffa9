/* SPDX-License-Identifier: Apache-2.0 */
/* Everything that writes a report, at once: the sampler every 10 ms (the
 * test sets LEAKWATCH_INTERVAL_MS=10, LEAKWATCH_REPORT_EVERY=1 and
 * LEAKWATCH_PROMETHEUS), leakwatch_dump() from four threads, forked children
 * that use CUDA (each writes its own report) and, from the test, snapshots
 * through the control socket to the same path.
 *
 *   rt_safety_soak MS [nofork]   runs for MS milliseconds; prints "children N" */
#include "safety.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static void *dumper(void *arg) {
    (void)arg;
    while (!atomic_load(&stop))
        lw_call("leakwatch_dump");
    return NULL;
}

NOINLINE static void *leak_soak(size_t n) {
    void *p;
    CHECK(cudaMalloc(&p, n));
    return p;
}

static long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
    long ms = arg_long(argc, argv, 1, 3000);
    int forks = !(argc > 2 && !strcmp(argv[2], "nofork"));
    leak_soak(4096);
    printf("ready\n");
    fflush(stdout);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, dumper, NULL);
    long end = now_ms() + ms, children = 0, step = 0;
    while (now_ms() < end) {
        void *p;
        CHECK(cudaMalloc(&p, 65536));
        CHECK(cudaFree(p));
        if (++step % 64 == 0) leak_soak(4096);
        if (forks && step % 256 == 0) {
            pid_t c = fork();
            if (c == 0) {
                leak_soak(8192); /* its own report, written at its exit */
                usleep(20000);
                exit(0);
            }
            if (c > 0) children++;
        }
        lw_call("leakwatch_step");
        usleep(100);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    while (wait(NULL) > 0) {
    }
    printf("children %ld\n", children);
    return 0;
}
