/* SPDX-License-Identifier: Apache-2.0 */
/* A workload that stays alive to be watched: allocates COUNT x SIZE bytes
 * through the runtime, says "ready" on stdout, then waits, either until its
 * standard input closes ("stdin") or until a signal ends it ("sleep", the
 * default). With "grow", it allocates SIZE more each STEP_MS and marks a
 * step, a slow leak for 'leakwatch top'. Under leakwatch's test clock
 * (LEAKWATCH_TEST_CLOCK=1) "ready" comes after a second of the run's time
 * (test_clock.h): the sampler's first samples are taken by then.
 * Usage: rt_sleeper [COUNT [SIZE [stdin|sleep|grow [STEP_MS]]]] */
#include "paths.h"
#include "test_clock.h"

#include <dlfcn.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

cudaError_t cudaMalloc(void **p, size_t s);

NOINLINE static void leak_sleeper(long count, long size) {
    for (long i = 0; i < count; i++) {
        void *p = NULL;
        CHECK(cudaMalloc(&p, (size_t)size));
    }
}

/* leakwatch_step when the shim is loaded; nothing otherwise. */
static void step(void) {
    void (*fn)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_step");
    if (fn) fn();
}

int main(int argc, char **argv) {
    long count = arg_long(argc, argv, 1, 3);
    long size = arg_long(argc, argv, 2, 1 << 20);
    const char *mode = argc > 3 ? argv[3] : "sleep";
    long step_ms = arg_long(argc, argv, 4, 50);
    leak_sleeper(count, size);
    /* Under leakwatch's test clock (LEAKWATCH_TEST_CLOCK=1), a second of the
     * run's time first: it returns once the sampler has taken its first
     * samples, so whatever looks after "ready" sees them. */
    test_clock_advance_us(1000000);
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    if (!strcmp(mode, "stdin")) {
        char buf[256];
        while (read(0, buf, sizeof buf) > 0) {
        }
        return 0;
    }
    for (;;) {
        if (!strcmp(mode, "grow")) {
            leak_sleeper(1, size);
            step();
            struct timespec ts = {step_ms / 1000, (step_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        } else {
            pause();
        }
    }
}
