/* SPDX-License-Identifier: Apache-2.0 */
#include "runstate.h"

#include "clock.h"
#include "options.h"

#include <pthread.h>
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
    uint64_t now = lw_run_now_coarse_ns(), start = start_ns;
    return now > start ? now - start : 0;
}

/* ---- the test clock (LEAKWATCH_TEST_CLOCK=1: for tests only) ----
 * The run's time is a counter that only the job moves
 * (leakwatch__test_clock_advance); each move waits until the sampler has
 * done what fell due by then. A verdict over time intervals then depends on
 * what the job did, never on how fast the machine ran it. */
static atomic_int test_clock; /* read on the allocation path: relaxed */
static _Atomic uint64_t virt_ns;
static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tc_cond = PTHREAD_COND_INITIALIZER;
static int sampler_in;         /* a sampler runs in this process */
static uint64_t sampler_until; /* it waits for this time; 0: it works */

static uint64_t virt_now(void) {
    uint64_t v = atomic_load(&virt_ns);
    if (v) return v;
    uint64_t want = lw_now_ns(); /* starts where the wall clock was */
    return atomic_compare_exchange_strong(&virt_ns, &v, want) ? want : v;
}

void lw_test_clock_init(void) {
    atomic_store_explicit(&test_clock, lw_opt_int(LW_OPT_TEST_CLOCK) != 0, memory_order_relaxed);
    /* Before the sampler starts (also in a forked child, which has none). */
    pthread_mutex_init(&tc_lock, NULL);
    pthread_cond_init(&tc_cond, NULL);
    sampler_in = 0;
    sampler_until = 0;
}

int lw_test_clock_on(void) {
    return atomic_load_explicit(&test_clock, memory_order_relaxed);
}

uint64_t lw_run_now_ns(void) {
    return lw_test_clock_on() ? virt_now() : lw_now_ns();
}

uint64_t lw_run_now_coarse_ns(void) {
    return lw_test_clock_on() ? virt_now() : lw_now_coarse_ns();
}

int lw_test_clock_advance(uint64_t ns, void (*wake_sampler)(void)) {
    if (!lw_test_clock_on()) {
        /* Before the first CUDA call the options are not loaded yet: the
         * environment says. */
        long on = 0;
        lw_option_env(LW_OPT_TEST_CLOCK, &on);
        if (!on) return -1;
    }
    virt_now(); /* started */
    /* What the job did before (a step mark) is the sampler's at the old
     * time: the same schedule whenever the sampler thread gets to run. */
    pthread_mutex_lock(&tc_lock);
    while (sampler_in && !sampler_until)
        pthread_cond_wait(&tc_cond, &tc_lock);
    pthread_mutex_unlock(&tc_lock);
    uint64_t now = atomic_fetch_add(&virt_ns, ns) + ns;
    if (wake_sampler) wake_sampler();
    pthread_mutex_lock(&tc_lock);
    while (sampler_in && (!sampler_until || sampler_until <= now))
        pthread_cond_wait(&tc_cond, &tc_lock);
    pthread_mutex_unlock(&tc_lock);
    return 0;
}

void lw_test_clock_sampler_woken(void) {
    pthread_mutex_lock(&tc_lock);
    if (sampler_in) sampler_until = 0;
    pthread_mutex_unlock(&tc_lock);
}

void lw_test_clock_sampler_waits(uint64_t until) {
    pthread_mutex_lock(&tc_lock);
    sampler_in = 1;
    sampler_until = until;
    pthread_cond_broadcast(&tc_cond);
    pthread_mutex_unlock(&tc_lock);
}

void lw_test_clock_sampler_works(void) {
    pthread_mutex_lock(&tc_lock);
    sampler_in = 1;
    sampler_until = 0;
    pthread_mutex_unlock(&tc_lock);
}

void lw_test_clock_sampler_gone(void) {
    pthread_mutex_lock(&tc_lock);
    sampler_in = 0;
    pthread_cond_broadcast(&tc_cond);
    pthread_mutex_unlock(&tc_lock);
}
