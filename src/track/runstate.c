/* SPDX-License-Identifier: Apache-2.0 */
#include "runstate.h"

#include "clock.h"

#include <stdatomic.h>

static _Atomic uint32_t steps;
static _Atomic uint64_t intervals;
static uint64_t start_ns;

uint32_t lw_step_now(void) {
    return atomic_load_explicit(&steps, memory_order_relaxed);
}
uint32_t lw_step_mark(void) {
    return atomic_fetch_add_explicit(&steps, 1, memory_order_relaxed) + 1;
}
void lw_step_reset(void) {
    atomic_store(&steps, 0);
}

uint64_t lw_intervals_now(void) {
    return atomic_load_explicit(&intervals, memory_order_relaxed);
}
uint64_t lw_intervals_close(void) {
    return atomic_fetch_add(&intervals, 1) + 1;
}
void lw_intervals_reset(void) {
    atomic_store(&intervals, 0);
}

uint32_t lw_run_clock(void) {
    uint32_t s = lw_step_now();
    return s ? s : (uint32_t)lw_intervals_now();
}

uint64_t lw_start_time_ns(void) {
    return start_ns;
}
void lw_set_start_time_ns(uint64_t t) {
    start_ns = t;
}

uint64_t lw_run_age_coarse_ns(void) {
    uint64_t now = lw_now_coarse_ns(), start = start_ns;
    return now > start ? now - start : 0;
}
