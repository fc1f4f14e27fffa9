/* SPDX-License-Identifier: Apache-2.0 */
/* Time, cheaply: the coarse monotonic clock is a vDSO read (~5 ns). */
#ifndef LW_CLOCK_H
#define LW_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t lw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lw_now_coarse_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
