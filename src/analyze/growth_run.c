/* SPDX-License-Identifier: Apache-2.0 */
/* The growth sampler's shared state (growth_run.h). */
#include "growth_run.h"

#include "runstate.h"

pthread_mutex_t lw_growth_lock = PTHREAD_MUTEX_INITIALIZER;
lw_growth_run lw_growth_r;

double lw_growth_now_s(void) {
    return (double)(lw_run_now_ns() - lw_start_time_ns()) / 1e9;
}
