/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose one thread that leakwatch attach may borrow is not its main
 * thread: the main thread computes for MS milliseconds while a second one
 * sleeps in nanosleep. It says "ready PID TID" (TID: the sleeping thread),
 * so that a test can take that thread with a tracer of its own, as a second
 * attach racing the first does (tests/integration/test_attach.c).
 * Usage: rt_attach_sidesleep [MS] */
#include "paths.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static atomic_int done_flag;
static atomic_long sleeper_tid;

static void *sleeper(void *arg) {
    (void)arg;
    atomic_store(&sleeper_tid, (long)syscall(SYS_gettid));
    while (!atomic_load(&done_flag)) {
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 10000;
    void *p;
    CHECK(cudaMalloc(&p, 4096));
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    while (!atomic_load(&sleeper_tid)) {
    }
    printf("ready %ld %ld\n", (long)getpid(), atomic_load(&sleeper_tid));
    fflush(stdout);
    volatile unsigned long x = 0;
    for (double end = now_ms() + (double)ms; now_ms() < end;)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
    atomic_store(&done_flag, 1);
    pthread_join(t, NULL);
    printf("done\n");
    return 0;
}
