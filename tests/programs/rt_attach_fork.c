/* SPDX-License-Identifier: Apache-2.0 */
/* A job that forks all the time (as DataLoader workers, subprocess and
 * multiprocessing do) while leakwatch attach attaches and detaches, again and
 * again (tests/integration/test_attach.c): two threads each fork a child
 * that exits at once, wait for it and fork again; the main thread allocates,
 * frees and sleeps. It says "ready PID", runs until STOP_FILE exists, and
 * ends with "done, N forks, M steps".
 * Usage: rt_attach_fork STOP_FILE */
#include "paths.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

static atomic_int stop_flag;
static atomic_long forks;

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void *forker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop_flag)) {
        pid_t c = fork();
        if (c == 0) _exit(0);
        if (c > 0) {
            while (waitpid(c, NULL, 0) < 0) {
            }
            atomic_fetch_add(&forks, 1);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *stop = argc > 1 ? argv[1] : "stop";
    void *p = NULL;
    CHECK(cudaMalloc(&p, 4096));
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, forker, NULL);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    long steps = 0;
    while (access(stop, F_OK) != 0) {
        void *q = NULL;
        if (cudaMalloc(&q, 4096) == 0) cudaFree(q);
        steps++;
        sleep_us(1000);
    }
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("done, %ld forks, %ld steps\n", (long)atomic_load(&forks), steps);
    return 0;
}
