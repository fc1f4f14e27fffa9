/* SPDX-License-Identifier: Apache-2.0 */
#include "growth.h"

#include "fmt.h"

#include "clock.h"
#include "device.h"
#include "live.h"
#include "options.h"
#include "runstate.h"
#include "sites.h"
#include "stats.h"
#include "totals.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GLOBAL_BINS 256
#define RING 4096
#define MAX_TRACKED_SITES 4096

typedef struct {
    double x, t;
    int64_t floor, peak;
} point;

/* Two locks: `ring_lock` guards only the queue of steps, so a training
 * thread marking a step never waits for an evaluation; `lock` guards the
 * series and the verdict. Order: lock, then ring_lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static point ring[RING];
static int ring_len;
static int marker_requested; /* set by the first step mark, under ring_lock */
static point batch[RING];    /* the sampler's copy of the queue, under lock */
static lw_series global;
static lw_bin global_bins[GLOBAL_BINS];
static lw_growth last;
static lw_decision decision; /* the announced verdict, from the evaluations */
static double last_x;        /* the newest point's step (or interval) */
static uint64_t evaluations, next_eval_at, points_at_eval;
static int marker_mode;
static int tracked;
static int warning_due;

static double now_s(void) {
    return (double)(lw_now_ns() - lw_start_time_ns()) / 1e9;
}

/* ---- per-site series ---- */

static lw_site_track *track_of(lw_site *s);

static void sites_point(double x, double t) {
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        int64_t live = atomic_load_explicit(&s->live_bytes, memory_order_relaxed);
        int64_t f = atomic_exchange_explicit(&s->floor, live, memory_order_relaxed);
        if (f > live) f = live;
        if (!s->track && (live <= 0 || !track_of(s))) continue;
        lw_series_add(&s->track->series, x, t, (double)f, (double)live);
    }
}

static lw_site_track *track_of(lw_site *s) {
    if (!s->track && tracked < MAX_TRACKED_SITES) {
        lw_site_track *tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        lw_series_init(&tr->series, tr->bins, LW_SITE_BINS);
        s->track = tr;
        tracked++;
    }
    return s->track;
}

static void count_kept(const lw_alloc *r, void *arg) {
    uint32_t since = *(const uint32_t *)arg;
    if (r->step < since) return;
    lw_site_track *tr = track_of(r->site);
    if (!tr) return;
    if (!tr->kept_count || r->step < tr->kept_first_step) tr->kept_first_step = r->step;
    if (!tr->kept_count || r->step > tr->kept_last_step) tr->kept_last_step = r->step;
    tr->kept_bytes += r->size;
    tr->kept_count++;
}

/* Which sites grow. Each live allocation carries the step it was made at, so
 * the bytes a site still holds from allocations made since the growth began,
 * divided by the steps since, is what the site keeps per step: exactly the
 * leak rate for a leaking site, about nothing for one whose allocations are
 * freed within the step, nothing for a cache filled before the growth. A
 * site leaks when it keeps at least a tenth of the global growth, from
 * allocations spread over at least a third of that span (not one burst). */
static void evaluate_sites(void) {
    double onset = isfinite(last.onset_x) ? last.onset_x : 0;
    uint32_t since = (uint32_t)ceil(onset), now = lw_run_clock();
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) s->track->kept_bytes = 0, s->track->kept_count = 0;
    lw_live_scan(count_kept, &since);
    double span = now > since ? (double)(now - since) : 1;
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        lw_site_track *tr = s->track;
        if (!tr) continue;
        tr->evaluated = 1;
        memset(&tr->growth, 0, sizeof tr->growth);
        tr->growth.verdict = LW_VERDICT_NO_LEAK;
        tr->growth.lo = tr->growth.hi = tr->growth.p_value = NAN;
        double rate = (double)tr->kept_bytes / span;
        tr->growth.slope = rate;
        if (tr->kept_count >= 3 && rate >= 0.1 * last.slope &&
            tr->kept_last_step - tr->kept_first_step >= span / 3) {
            tr->growth.verdict = LW_VERDICT_LEAK;
            tr->growth.onset_x = tr->kept_first_step;
            tr->growth.reason = "keeps memory from allocations made since the growth began";
        }
    }
}

/* ---- the verdict ---- */

static void evaluate(void) {
    lw_bin bins[GLOBAL_BINS + 1];
    int n = lw_series_get(&global, bins, GLOBAL_BINS + 1);
    lw_detect_params p = lw_detect_defaults();
    lw_detect(bins, n, &p, &last);
    evaluations++;
    points_at_eval = global.points;
    lw_decision_update(&decision, &last, global.points, last_x, (int)lw_opt_int(LW_OPT_CONFIRM));
    if (decision.announced == LW_VERDICT_LEAK) {
        evaluate_sites();
        /* The warning on stderr waits longer than the verdict: a job's log is
         * no place for a warm-up mistaken for a leak. */
        if (global.points >= 64 && global.points >= 2 * decision.raw_leak_since) warning_due = 1;
    }
}

/* Evaluations follow the data, not the clock: at every point early on, then
 * every 1/32 of the points seen. The verdict thus does not depend on how
 * promptly this thread was scheduled. */
static void add_point(const point *pt) {
    lw_series_add(&global, pt->x, pt->t, (double)pt->floor, (double)pt->peak);
    last_x = pt->x;
    if (global.points >= next_eval_at) {
        evaluate();
        uint64_t gap = global.points / 32;
        next_eval_at = global.points + (gap ? gap : 1);
    }
}

static void forget_history(void);

/* Moves the queued steps into the series. Called with `lock` held. */
static void drain_ring(void) {
    pthread_mutex_lock(&ring_lock);
    int n = ring_len, switch_to_markers = marker_requested && !marker_mode;
    memcpy(batch, ring, (size_t)n * sizeof *batch);
    ring_len = 0;
    pthread_mutex_unlock(&ring_lock);
    if (switch_to_markers) {
        /* Marked steps from now on: time intervals would mix two scales. */
        marker_mode = 1;
        forget_history();
    }
    if (!n) return;
    for (int i = 0; i < n; i++)
        add_point(&batch[i]);
    sites_point(batch[n - 1].x, batch[n - 1].t);
}

static void close_interval(void) {
    point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    pt.x = (double)lw_intervals_close();
    pt.t = now_s();
    add_point(&pt);
    sites_point(pt.x, pt.t);
}

static void forget_history(void) {
    lw_series_reset(&global);
    lw_decision_init(&decision);
    memset(&last, 0, sizeof last);
    last_x = 0;
    next_eval_at = 0;
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) lw_series_reset(&s->track->series);
}

void lw_growth_init(void) {
    pthread_mutex_lock(&lock);
    lw_series_init(&global, global_bins, GLOBAL_BINS);
    forget_history();
    marker_mode = 0;
    lw_intervals_reset();
    pthread_mutex_lock(&ring_lock);
    ring_len = 0;
    marker_requested = 0;
    pthread_mutex_unlock(&ring_lock);
    pthread_mutex_unlock(&lock);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &ca);
    pthread_condattr_destroy(&ca);
}

int lw_growth_wait(const struct timespec *deadline) {
    int timed_out = 0;
    pthread_mutex_lock(&ring_lock);
    while (!ring_len && !timed_out)
        timed_out = pthread_cond_timedwait(&wake, &ring_lock, deadline) != 0;
    pthread_mutex_unlock(&ring_lock);
    return timed_out;
}

void lw_growth_update(int close_interval_now) {
    pthread_mutex_lock(&lock);
    drain_ring();
    if (close_interval_now && !marker_mode) close_interval();
    pthread_mutex_unlock(&lock);
}

int lw_growth_take_warning(void) {
    pthread_mutex_lock(&lock);
    int due = warning_due;
    warning_due = 0;
    pthread_mutex_unlock(&lock);
    return due;
}

void lw_growth_step(void) {
    point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    pt.x = (double)lw_step_now();
    pt.t = now_s();
    pthread_mutex_lock(&ring_lock);
    if (!marker_requested) {
        /* Intervals queued before the first mark are dropped with the time
         * series (drain_ring). */
        marker_requested = 1;
        ring_len = 0;
    }
    if (ring_len == RING) {
        /* The sampler is behind: fold this step into the newest one. */
        point *q = &ring[RING - 1];
        q->x = pt.x;
        q->t = pt.t;
        if (pt.floor < q->floor) q->floor = pt.floor;
        if (pt.peak > q->peak) q->peak = pt.peak;
    } else {
        ring[ring_len++] = pt;
    }
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&ring_lock);
}

void lw_growth_flush(void) {
    pthread_mutex_lock(&lock);
    drain_ring();
    /* One more point for each site: the state now. */
    sites_point((double)lw_run_clock(), now_s());
    if (global.points != points_at_eval)
        evaluate();
    else if (decision.announced == LW_VERDICT_LEAK)
        evaluate_sites(); /* sites may have gained points since */
    pthread_mutex_unlock(&lock);
}

void lw_growth_get(lw_growth_state *st, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lock);
    memset(st, 0, sizeof *st);
    st->verdict = decision.announced;
    st->last = last;
    snprintf(st->reason, sizeof st->reason, "%s", decision.reason);
    st->step_source = marker_mode ? "marker" : "time";
    st->steps = marker_mode ? lw_step_now() : lw_intervals_now();
    st->first_leak_step =
        isnan(decision.first_leak_x) ? -1 : (int64_t)llround(decision.first_leak_x);
    st->withdrawn = decision.withdrawn;
    st->evaluations = evaluations;
    lw_device_last_mem(&st->device_free, &st->device_total);
    st->interval_s = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    st->bin_width = global.width;
    if (bins && nbins) *nbins = lw_series_get(&global, bins, max);
    pthread_mutex_unlock(&lock);
}

void lw_growth_each_site(void (*fn)(lw_site *s, const lw_site_track *t, void *arg), void *arg) {
    pthread_mutex_lock(&lock);
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) fn(s, s->track, arg);
    pthread_mutex_unlock(&lock);
}

/* Both locks, in their order: a thread marking a step holds ring_lock, and a
 * child that inherited it held would hang at its first CUDA call. */
void lw_growth_lock_for_fork(void) {
    pthread_mutex_lock(&lock);
    pthread_mutex_lock(&ring_lock);
}

void lw_growth_unlock_after_fork(void) {
    pthread_mutex_unlock(&ring_lock);
    pthread_mutex_unlock(&lock);
}

void lw_growth_oom(const lw_growth_state *g, double *seconds, double *steps) {
    *seconds = *steps = NAN;
    if (g->verdict != LW_VERDICT_LEAK || g->device_free < 0) return;
    lw_answer_oom((double)g->device_free, g->last.bytes_per_second, g->last.slope, seconds, steps);
}

int lw_growth_snapshot(struct lw_growth_view *out) {
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    if (!g.evaluations) return -1;
    out->verdict = g.verdict;
    out->bytes_per_step = g.last.slope;
    out->bytes_per_second = g.last.bytes_per_second;
    out->p_value = g.last.p_value;
    double steps;
    lw_growth_oom(&g, &out->oom_eta_seconds, &steps);
    out->steps = g.steps;
    return 0;
}

/* In a forked child, at its own first CUDA call (lifecycle.c): the parent's
 * series, verdict and readings are not the child's. The sites themselves,
 * with their tracks, are forgotten by sites.c. Single-threaded here. */
void lw_growth_forget_parent(void) {
    forget_history();
    tracked = 0;
    marker_mode = 0;
    ring_len = 0;
    marker_requested = 0;
    lw_intervals_reset();
    lw_device_forget();
    evaluations = 0;
    points_at_eval = 0;
    warning_due = 0;
}
