/* SPDX-License-Identifier: Apache-2.0 */
/* The growth sampler's entry points (growth.h): takes the step queue in,
 * routes each point to its series, flushes and ends the run. Each series and
 * the choice among them is a file of its own (growth_run.h lists them). */
#include "growth.h"
#include "growth_global.h"
#include "growth_host.h"
#include "growth_queue.h"
#include "growth_run.h"
#include "growth_signal.h"
#include "growth_torch.h"
#include "growth_unmarked.h"

#include "fmt.h"

#include "device.h"
#include "runstate.h"
#include "sites.h"
#include "totals.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static lw_growth_point batch[LW_GROWTH_RING]; /* the sampler's copy of the queue, under lock */

/* One step (or interval) into the device's floor and pinned host memory. */
static void add_point(const lw_growth_point *pt) {
    int host_evaluated = lw_growth_host_add(pt);
    lw_growth_global_add(pt);
    if (host_evaluated) lw_growth_host_judge_sites();
}

static void forget_history(void) {
    lw_growth_torch_forget();
    lw_growth_host_forget();
    lw_growth_global_forget();
    lw_growth_r.decided_at_exit = 0;
    lw_growth_r.finished = 0;
    lw_growth_unmarked_forget();
    lw_attribution_forget();
}

/* Moves the queued steps into the series. Called with `lock` held. */
static int drain_ring(void) {
    if (lw_growth_r.finished) return 0;
    int marked;
    int n = lw_growth_queue_take(batch, &marked);
    if (marked && !lw_growth_r.marker_mode) {
        /* Marked steps from now on: time intervals would mix two scales. */
        lw_growth_r.marker_mode = 1;
        forget_history();
    }
    lw_growth_torch_drain();
    if (!n) return 0;
    lw_growth_unmarked_marks(batch, n);
    for (int i = 0; i < n; i++)
        add_point(&batch[i]);
    lw_attribution_point(batch[n - 1].x, batch[n - 1].t);
    return n;
}

static void close_interval(void) {
    lw_growth_point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    lw_totals_take_host_floor_peak(&pt.host_floor, &pt.host_peak);
    pt.x = (double)lw_intervals_close();
    pt.t = lw_growth_now_s();
    add_point(&pt);
    lw_attribution_point(pt.x, pt.t);
}

void lw_growth_init(void) {
    pthread_mutex_lock(&lw_growth_lock);
    lw_growth_global_init();
    lw_growth_host_init();
    forget_history();
    lw_growth_r.marker_mode = 0;
    lw_growth_signal_forget();
    lw_intervals_reset();
    lw_growth_queue_reset();
    pthread_mutex_unlock(&lw_growth_lock);
    lw_growth_queue_init_wake();
}

int lw_growth_unmarked_tick(void) {
    pthread_mutex_lock(&lw_growth_lock);
    /* The marks queued since (a mark wakes no one once the pace is known):
     * the time of the newest decides whether a phase without marks began. */
    int marks = drain_ring();
    if (lw_growth_r.marker_mode && !lw_growth_r.finished) lw_growth_unmarked_interval();
    pthread_mutex_unlock(&lw_growth_lock);
    return marks;
}

void lw_growth_update(int close_interval_now) {
    pthread_mutex_lock(&lw_growth_lock);
    drain_ring();
    if (close_interval_now && !lw_growth_r.marker_mode && !lw_growth_r.finished) close_interval();
    if (close_interval_now && lw_growth_r.marker_mode && !lw_growth_r.finished)
        lw_growth_unmarked_interval();
    pthread_mutex_unlock(&lw_growth_lock);
}

int lw_growth_take_growing(void) {
    pthread_mutex_lock(&lw_growth_lock);
    int due = lw_growth_r.growing_due;
    lw_growth_r.growing_due = 0;
    pthread_mutex_unlock(&lw_growth_lock);
    return due;
}

int lw_growth_take_warning(void) {
    pthread_mutex_lock(&lw_growth_lock);
    int due = lw_growth_r.warning_due;
    lw_growth_r.warning_due = 0;
    pthread_mutex_unlock(&lw_growth_lock);
    return due;
}

void lw_growth_flush(void) {
    pthread_mutex_lock(&lw_growth_lock);
    drain_ring();
    /* One more point for each site: the state now. */
    if (!lw_growth_r.finished) lw_attribution_point((double)lw_run_clock(), lw_growth_now_s());
    lw_growth_global_flush();
    lw_growth_host_flush();
    lw_growth_torch_flush();
    pthread_mutex_unlock(&lw_growth_lock);
}

void lw_growth_finish(void) {
    pthread_mutex_lock(&lw_growth_lock);
    if (lw_growth_r.finished) {
        pthread_mutex_unlock(&lw_growth_lock);
        return;
    }
    drain_ring();
    lw_growth_r.finished = 1;
    /* What the job did after its last mark (or interval): a release there
     * shows only in the floor since then. */
    int64_t tail_floor, tail_peak;
    lw_totals_take_floor_peak(&tail_floor, &tail_peak);
    lw_attribution_point((double)lw_run_clock(), lw_growth_now_s());
    lw_growth_global_finish(tail_floor);
    lw_growth_unmarked_finish();
    lw_growth_host_finish();
    lw_growth_torch_finish();
    pthread_mutex_unlock(&lw_growth_lock);
}

void lw_growth_each_site(void (*fn)(lw_site *s, const lw_site_track *t, void *arg), void *arg) {
    pthread_mutex_lock(&lw_growth_lock);
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) fn(s, s->track, arg);
    pthread_mutex_unlock(&lw_growth_lock);
}

/* Both locks, in their order: a thread marking a step holds the queue's,
 * and a child that inherited it held would hang at its first CUDA call. */
void lw_growth_lock_for_fork(void) {
    pthread_mutex_lock(&lw_growth_lock);
    lw_growth_queue_lock();
}

void lw_growth_unlock_after_fork(void) {
    lw_growth_queue_unlock();
    pthread_mutex_unlock(&lw_growth_lock);
}

/* Set at an out-of-memory (output/anatomy.c): a run that ran out of memory
 * is never forecast to. */
static _Atomic int oom_seen;

void lw_growth_note_oom(void) {
    atomic_store(&oom_seen, 1);
}

void lw_growth_oom(const lw_growth_state *g, double *seconds, double *steps) {
    *seconds = *steps = NAN;
    if (g->verdict != LW_VERDICT_LEAK || g->available < 0) return;
    if (atomic_load(&oom_seen) && (!g->memory_kind || !strcmp(g->memory_kind, "device"))) return;
    lw_answer_oom((double)g->available, g->last.bytes_per_second, g->last.slope, seconds, steps);
}

/* In a forked child, at its own first CUDA call (lifecycle.c): the parent's
 * series, verdict and readings are not the child's. The sites themselves,
 * with their tracks, are forgotten by sites.c. Single-threaded here. */
void lw_growth_forget_parent(void) {
    forget_history();
    lw_growth_signal_forget();
    atomic_store(&oom_seen, 0);
    lw_attribution_forget_parent();
    lw_growth_r.marker_mode = 0;
    lw_growth_queue_reset();
    lw_intervals_reset();
    lw_device_forget();
    lw_growth_r.evaluations = 0;
    lw_growth_global.points_at_eval = 0;
    lw_growth_r.warning_due = 0;
    lw_growth_r.growing_due = 0;
}
