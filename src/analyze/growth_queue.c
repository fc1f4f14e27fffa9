/* SPDX-License-Identifier: Apache-2.0 */
/* The step queue (growth_queue.h). */
#include "growth.h"
#include "growth_queue.h"
#include "growth_run.h"

#include "runstate.h"
#include "totals.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static lw_growth_point ring[LW_GROWTH_RING];
static int ring_len;
static int marker_requested; /* set by the first step mark, under ring_lock */
/* The worker is woken by the first WAKE_MARKS marks (it learns the job's
 * pace from them) and whenever the queue is half full; after that it takes
 * the queue in on its own schedule: every gap_period() (half a mean step,
 * 5 ms at least) in lw_growth_unmarked_tick, and every interval. A step mark
 * then costs no wake-up of another thread (a futex call and a context switch
 * per step on the training thread's core). Under ring_lock. */
#define WAKE_MARKS 8
static unsigned marks_queued;
static int wake_asked;
static uint64_t wakes;                      /* signals sent (lw_growth_wakes) */
static lw_torch_point tring[LW_TORCH_RING]; /* under ring_lock */
static int tring_len;

int lw_growth_queue_take(lw_growth_point *out, int *marked) {
    pthread_mutex_lock(&ring_lock);
    int n = ring_len;
    *marked = marker_requested;
    memcpy(out, ring, (size_t)n * sizeof *out);
    ring_len = 0;
    pthread_mutex_unlock(&ring_lock);
    return n;
}

int lw_growth_queue_take_torch(lw_torch_point *out) {
    pthread_mutex_lock(&ring_lock);
    int n = tring_len;
    memcpy(out, tring, (size_t)n * sizeof *out);
    tring_len = 0;
    pthread_mutex_unlock(&ring_lock);
    return n;
}

void lw_growth_queue_torch(lw_torch_point pt) {
    pthread_mutex_lock(&ring_lock);
    /* Read at a step mark, or, in a run that marks none, once per time
     * interval (the helper's interval reader): x on the run's own scale. */
    pt.x = (double)lw_run_clock();
    if (tring_len == LW_TORCH_RING) {
        /* The sampler is behind: the newest point replaces the last one. */
        tring_len--;
    }
    tring[tring_len++] = pt;
    pthread_mutex_unlock(&ring_lock);
}

void lw_growth_queue_reset(void) {
    pthread_mutex_lock(&ring_lock);
    ring_len = 0;
    tring_len = 0;
    marker_requested = 0;
    marks_queued = 0;
    wake_asked = 0;
    pthread_mutex_unlock(&ring_lock);
}

void lw_growth_queue_init_wake(void) {
    /* Once per process: the sampler of a session that was just detached may
     * still wait on it when an attach starts the next one (initializing a
     * condition variable with a waiter hung both). A forked child makes its
     * own: the parent's waiters are not in it. */
    static pid_t wake_pid;
    if (wake_pid == getpid()) return;
    wake_pid = getpid();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &ca);
    pthread_condattr_destroy(&ca);
}

void lw_growth_queue_lock(void) {
    pthread_mutex_lock(&ring_lock);
}

void lw_growth_queue_unlock(void) {
    pthread_mutex_unlock(&ring_lock);
}

/* lw_growth_wait under the test clock (runstate.h): the deadline is on the
 * run's time, which only the job moves; it wakes the sampler through
 * lw_growth_wake_sampler after each move and waits until the sampler waits
 * again (lw_test_clock_advance). */
static int test_clock_wait(const struct timespec *deadline) {
    uint64_t until = (uint64_t)deadline->tv_sec * 1000000000u + (uint64_t)deadline->tv_nsec;
    pthread_mutex_lock(&ring_lock);
    while (!ring_len && lw_run_now_ns() < until) {
        lw_test_clock_sampler_waits(until);
        pthread_cond_wait(&wake, &ring_lock);
    }
    int timed_out = !ring_len;
    wake_asked = 0;
    lw_test_clock_sampler_works();
    pthread_mutex_unlock(&ring_lock);
    return timed_out;
}

void lw_growth_wake_sampler(void) {
    pthread_mutex_lock(&ring_lock);
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&ring_lock);
}

int lw_growth_wait(const struct timespec *deadline) {
    if (lw_test_clock_on()) return test_clock_wait(deadline);
    int timed_out = 0;
    pthread_mutex_lock(&ring_lock);
    while (!wake_asked && !timed_out)
        timed_out = pthread_cond_timedwait(&wake, &ring_lock, deadline) != 0;
    if (wake_asked) timed_out = 0;
    wake_asked = 0;
    pthread_mutex_unlock(&ring_lock);
    return timed_out;
}

void lw_growth_step(void) {
    lw_growth_point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    lw_totals_take_host_floor_peak(&pt.host_floor, &pt.host_peak);
    pt.x = (double)lw_step_now();
    pt.t = lw_growth_now_s();
    pthread_mutex_lock(&ring_lock);
    if (!marker_requested) {
        /* Intervals queued before the first mark are dropped with the time
         * series (growth.c: drain_ring). */
        marker_requested = 1;
        ring_len = 0;
        tring_len = 0; /* PyTorch's counters read per interval, too */
    }
    if (ring_len == LW_GROWTH_RING) {
        /* The sampler is behind: fold this step into the newest one. */
        lw_growth_point *q = &ring[LW_GROWTH_RING - 1];
        q->x = pt.x;
        q->t = pt.t;
        if (pt.floor < q->floor) q->floor = pt.floor;
        if (pt.peak > q->peak) q->peak = pt.peak;
        if (pt.host_floor < q->host_floor) q->host_floor = pt.host_floor;
        if (pt.host_peak > q->host_peak) q->host_peak = pt.host_peak;
    } else {
        ring[ring_len++] = pt;
    }
    if (marks_queued < WAKE_MARKS) marks_queued++;
    if (marks_queued < WAKE_MARKS || ring_len >= LW_GROWTH_RING / 2) {
        wake_asked = 1;
        wakes++;
        if (lw_test_clock_on()) lw_test_clock_sampler_woken();
        pthread_cond_signal(&wake);
    }
    pthread_mutex_unlock(&ring_lock);
}

uint64_t lw_growth_wakes(void) {
    pthread_mutex_lock(&ring_lock);
    uint64_t n = wakes;
    pthread_mutex_unlock(&ring_lock);
    return n;
}
