/* SPDX-License-Identifier: Apache-2.0 */
/* A job with a thread made by a bare clone() (as some language runtimes and
 * sanitizers make them): it shares the main thread's thread pointer, so no C
 * library call is safe on it, yet it waits in nanosleep, which leakwatch
 * attach would otherwise prefer. The main thread computes for MS
 * milliseconds, so no thread may be borrowed. Loads the driver first (a job
 * that uses CUDA). Usage: dl_attach_rawthread [MS] */
#include "paths.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int sleeper(void *arg) {
    (void)arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    for (;;)
        syscall(SYS_nanosleep, &ts, NULL);
    return 0;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    long ms = arg_long(argc, argv, 1, 2500);
    if (!dlopen("libcuda.so.1", RTLD_NOW)) return 2;
    size_t size = 256 * 1024;
    char *stack = malloc(size);
    if (!stack ||
        clone(sleeper, stack + size,
              CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
              NULL) < 0)
        return 2;
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    volatile double x = 0;
    for (double end = now_ms() + (double)ms; now_ms() < end;)
        for (int i = 0; i < 1000; i++)
            x += i;
    printf("done\n");
    fflush(stdout);
    _exit(0); /* the bare thread has no exit of its own */
}
