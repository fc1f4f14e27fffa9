/* SPDX-License-Identifier: Apache-2.0 */
/* Time in a test program. Under leakwatch's test clock (the test sets
 * LEAKWATCH_TEST_CLOCK=1: src/track/runstate.h) a pause moves the run's time
 * on (leakwatch__test_clock_advance, which returns once leakwatch's sampler
 * has closed the intervals that fell due) instead of sleeping, and the
 * program's own clock is that time: a run over time intervals is then the
 * same on an idle machine, a loaded one and under a sanitizer. Without it
 * (no shim, or the variable unset) the pause sleeps. */
#ifndef LW_TEST_CLOCK_H
#define LW_TEST_CLOCK_H

#include <dlfcn.h>
#include <errno.h>
#include <time.h>

static long long test_clock_us = -1; /* the time passed under the test clock; -1: off */

/* 1 when the test clock moved by us. */
static inline int test_clock_advance_us(long us) {
    static int (*advance)(long long ns);
    static int looked;
    if (!looked) {
        advance = (int (*)(long long))dlsym(RTLD_DEFAULT, "leakwatch__test_clock_advance");
        looked = 1;
    }
    if (!advance || advance((long long)us * 1000) != 0) return 0;
    test_clock_us = (test_clock_us < 0 ? 0 : test_clock_us) + us;
    return 1;
}

/* A pause of us microseconds after however long the work took. */
static inline void pass_us(long us) {
    if (test_clock_advance_us(us)) return;
    struct timespec d = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
}

/* The program's clock in ms: the test clock's time once it has moved, else
 * the monotonic clock. */
static inline double job_now_ms(void) {
    if (test_clock_us >= 0) return (double)test_clock_us / 1e3;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

#endif
