/* SPDX-License-Identifier: Apache-2.0 */
/* A job no thread of which may be borrowed by leakwatch attach: the main
 * thread computes, the other waits in epoll_wait (which an interruption
 * would end with EINTR). It says "ready PID", computes for MS milliseconds,
 * and reports how often epoll_wait was interrupted: 0, attached or not.
 * Usage: rt_attach_busy [MS] */
#include "paths.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

static atomic_int done_flag;
static atomic_long interrupted;

static void *waiter(void *arg) {
    (void)arg;
    int ep = epoll_create1(0);
    struct epoll_event ev;
    while (!atomic_load(&done_flag))
        if (epoll_wait(ep, &ev, 1, 50) < 0 && errno == EINTR) atomic_fetch_add(&interrupted, 1);
    close(ep);
    return NULL;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    long ms = arg_long(argc, argv, 1, 3000);
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    volatile double x = 0;
    for (double end = now_ms() + (double)ms; now_ms() < end;)
        for (int i = 0; i < 1000; i++)
            x += i;
    atomic_store(&done_flag, 1);
    pthread_join(t, NULL);
    printf("done, epoll_wait interrupted %ld times\n", (long)atomic_load(&interrupted));
    return 0;
}
