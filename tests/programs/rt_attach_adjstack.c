/* SPDX-License-Identifier: Apache-2.0 */
/* A job whose thread stacks lie next to each other, as the program placed
 * them (pthread_attr_setstack, no guard page: one mapping), for
 * tests/integration/test_attach.c. Thread B sleeps (a thread an attach may
 * borrow) on a small stack; thread A, whose stack ends where B's begins,
 * computes (never borrowed): it writes a counter all over a buffer at the
 * top of its stack, checks that the buffer holds it, and again. An attach that wrote bytes back
 * below B's stack pointer reverted A's buffer. Thread C waits on a condition variable on a stack of
 * its own (a thread an attach may borrow, after B); the main thread waits in epoll_wait. It says
 * "ready PID", runs until STOP_FILE exists and ends with "done, A's stack reverted N times". Usage:
 * rt_attach_adjstack STOP_FILE */
#include "paths.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

#define SIZE_A (1024 * 1024)
#define SIZE_B (192 * 1024)
#define WORDS 4096

static const char *stop;
static atomic_long reverted;

static void *thread_a(void *arg) {
    (void)arg;
    volatile long buf[WORDS];
    for (long i = 1; (i & 1023) || access(stop, F_OK) != 0; i++) {
        for (int k = 0; k < WORDS; k++)
            buf[k] = i;
        for (int k = 0; k < WORDS; k++)
            if (buf[k] != i) {
                atomic_fetch_add(&reverted, 1);
                break;
            }
    }
    return NULL;
}

static pthread_mutex_t c_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c_wake = PTHREAD_COND_INITIALIZER;
static int c_done;

static void *thread_c(void *arg) {
    (void)arg;
    pthread_mutex_lock(&c_lock);
    while (!c_done)
        pthread_cond_wait(&c_wake, &c_lock);
    pthread_mutex_unlock(&c_lock);
    return NULL;
}

static void *thread_b(void *arg) {
    (void)arg;
    while (access(stop, F_OK) != 0) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    stop = argc > 1 ? argv[1] : "stop";
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    char *mem =
        mmap(NULL, SIZE_A + SIZE_B, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 2;
    pthread_attr_t a, b;
    pthread_attr_init(&a);
    pthread_attr_init(&b);
    pthread_attr_setstack(&a, mem, SIZE_A);
    pthread_attr_setstack(&b, mem + SIZE_A, SIZE_B);
    pthread_attr_setguardsize(&a, 0);
    pthread_attr_setguardsize(&b, 0);
    pthread_t ta, tb, tc;
    if (pthread_create(&tc, NULL, thread_c, NULL) != 0 ||
        pthread_create(&ta, &a, thread_a, NULL) != 0 ||
        pthread_create(&tb, &b, thread_b, NULL) != 0)
        return 3;
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev;
    while (access(stop, F_OK) != 0)
        epoll_wait(ep, &ev, 1, 5);
    pthread_mutex_lock(&c_lock);
    c_done = 1;
    pthread_cond_signal(&c_wake);
    pthread_mutex_unlock(&c_lock);
    pthread_join(tc, NULL);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    printf("done, A's stack reverted %ld times\n", (long)atomic_load(&reverted));
    return 0;
}
