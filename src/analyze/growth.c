/* SPDX-License-Identifier: Apache-2.0 */
#include "growth.h"

#include "cycles.h"
#include "tracked.h"

#include "fmt.h"

#include "clock.h"
#include "device.h"
#include "host_mem.h"
#include "options.h"
#include "runstate.h"
#include "sites.h"
#include "totals.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#define RING 4096

typedef struct {
    double x, t;
    int64_t floor, peak;
    int64_t host_floor, host_peak; /* pinned host memory */
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
/* The worker is woken by the first WAKE_MARKS marks (it learns the job's
 * pace from them) and whenever the queue is half full; after that it takes
 * the queue in on its own schedule: every gap_period() (half a mean step,
 * 5 ms at least) in lw_growth_unmarked_tick, and every interval. A step mark
 * then costs no wake-up of another thread (a futex call and a context switch
 * per step on the training thread's core). Under ring_lock. */
#define WAKE_MARKS 8
static unsigned marks_queued;
static int wake_asked;
static uint64_t wakes;    /* signals sent (lw_growth_wakes) */
static point batch[RING]; /* the sampler's copy of the queue, under lock */
/* The floor of the CUDA allocations leakwatch records itself, per step (or
 * interval): the run's verdict, with the job's pace and its cycles. */
static lw_tracked global;
/* Pinned host memory: host RAM, so never part of the floor above; its own
 * series and verdict (same rules), evaluated once it has held any. */
static struct {
    lw_tracked t;
    int seen;
} host;
static uint64_t evaluations;        /* of the global, tensor and unmarked series */
static _Atomic int steps_are_calls; /* lw_growth_steps_are_calls */
static int marker_mode;
static int warning_due;
static int growing_due; /* an announced leak not yet alarmed (lw_growth_take_growing) */

/* ---- a release at the end of the run ----
 * Memory a job frees at teardown (interpreter exit, a final cleanup) after
 * its last step mark, or in the last intervals of a run without marks, says
 * nothing about its steady state: growth established before it stands. A
 * point is low when its floor is back near the start-up level: within a
 * quarter of the way from the lowest floor seen (the first point, which may
 * predate the first allocation, left out) to the highest. When the newest
 * points are low after a high one (release_tail), the series and verdict
 * from before that drop are kept aside (pre); lw_growth_finish uses them
 * when the run ends within that drop. */
#define RELEASE_MIN_BYTES 4096.0
static struct {
    lw_tracked t;  /* the global series and verdict before the drop */
    int64_t floor; /* the floor of the last point before the drop */
} pre;
static int release_tail; /* the newest points are low, after a high one */
static double base_floor, high_floor;
static int have_base;
static int64_t prev_floor;
static int64_t released_bytes = -1; /* set by lw_growth_finish: released at exit */
static int decided_at_exit;
/* Set by lw_growth_finish: the final verdict is made; the worker's later
 * intervals (it runs until the process ends) and marks no longer change it,
 * so the report and the summary written after it agree. */
static int finished;

/* ---- phases without step marks inside a marked job ----
 * A validation loop makes no optimizer step, so no mark arrives while it
 * runs, and growth there never reaches the marked series. Once no mark has
 * come for 8 mean steps (the mean time between marks), the worker samples
 * the floor every half mean step (gap_period) into a series of its own,
 * across all such phases; its verdict (same rule) decides when the marked
 * series has no leak (lw_growth_get), in those intervals (growth.step_source
 * "time"). */
typedef struct {
    lw_tracked t; /* x: the phases' intervals, numbered from 1 */
    int active, started;
    uint32_t since_step; /* the step count when the first such phase began */
    double first_mark_t, last_mark_t;
    uint64_t marks;
    double last_point_t, period; /* the newest point's time; the sampling period */
    uint64_t events;             /* allocations and frees at the newest point */
    int idle_tail;               /* the newest points saw none */
} gap_track;
static gap_track unmarked;
/* The unmarked series before its idle tail (gap_interval). */
static lw_tracked unmarked_busy;

/* ---- PyTorch's own counters: one series per device ----
 * Fed by the Python helper at each step mark (lw_growth_torch_counters). The
 * bytes held by live tensors grow by exactly what a program keeps, even when
 * the caching allocator never needs a new segment; once a device has points
 * this series decides the verdict (lw_growth_get), and the segment series
 * above is kept beside it. */
typedef struct {
    int device;
    double x, t;
    int64_t allocated, reserved, device_free;
} torch_point;

#define TORCH_RING 1024
static torch_point tring[TORCH_RING]; /* under ring_lock */
static int tring_len;
static torch_point tbatch[TORCH_RING]; /* under lock */

typedef struct {
    lw_tracked t; /* the same rule as the global series', its pace and cycles */
    int64_t allocated, reserved, device_free;
    /* A release at the end (the job's leaking function returned, its
     * teardown): as for the global series (watch_release), the newest
     * points back near the lowest level after a high one; `pre` is the
     * series before them, and the verdict at the end is the one on it. */
    lw_tracked pre;
    int releasing, have_base;
    double base, high, prev;
} torch_track;

static torch_track *ttracks[LW_TORCH_MAX_DEVICES]; /* under lock; NULL: no point yet */
/* The latest raw evaluation per device sees growth: read by the helper's
 * thread without the lock. */
static _Atomic unsigned char tgrowing[LW_TORCH_MAX_DEVICES];

static double now_s(void) {
    return (double)(lw_run_now_ns() - lw_start_time_ns()) / 1e9;
}

/* ---- the sites the growth comes from (attribution.h) ----
 * The onset as the leaking sites show it (steps, from 1); NAN: no leaking
 * site. */
static double sites_onset = NAN;

/* Judges the sites on the global series' growth. */
static void evaluate_sites(void) {
    sites_onset = lw_attribution_judge(&global.last);
}

/* The onset said, in every view: never later than where a leaking site's
 * growth demonstrably began (sites_onset), never before step 1. A bin's
 * range that holds that step becomes that step. */
static void cap_onset(lw_growth *g) {
    if (!isfinite(g->onset_x)) return;
    double hi = isfinite(g->onset_hi) ? g->onset_hi : g->onset_x;
    if (isfinite(sites_onset) && sites_onset <= hi)
        g->onset_x = g->onset_lo = g->onset_hi = sites_onset;
    if (g->onset_x < 1) g->onset_x = g->onset_lo = 1;
    if (isfinite(g->onset_hi) && g->onset_hi < g->onset_lo) g->onset_hi = g->onset_lo;
}

/* ---- pinned host memory ---- */

/* Returns 1 when the series was evaluated. */
static int host_add(const point *pt) {
    if (pt->host_peak > 0) host.seen = 1;
    if (!host.seen) return 0;
    lw_tracked_add(&host.t, pt->x, pt->t, (double)pt->host_floor, (double)pt->host_peak);
    if (!lw_tracked_due(&host.t)) return 0;
    lw_tracked_evaluate(&host.t);
    return 1;
}

static void host_forget(void) {
    lw_tracked_forget(&host.t);
    host.seen = 0;
}

/* The sites a pinned host leak comes from, when it alone grows: neither the
 * device's floor nor the phases without marks do (their own judgements of
 * the sites stand then). Called with `lock` held. */
static double host_sites_onset = NAN;
/* Its sites are judged (a leaking site found): the PyTorch helper's cue to
 * look for what keeps them (lw_growth_torch_counters' bit 1), read without
 * the lock. */
static _Atomic unsigned char host_cue;
static int host_leaking(void) {
    return host.seen &&
           (host.t.decision.announced == LW_VERDICT_LEAK || host.t.last.verdict == LW_VERDICT_LEAK);
}
static void host_judge_sites(void) {
    if (!host_leaking()) {
        host_sites_onset = NAN;
        atomic_store(&host_cue, 0);
        return;
    }
    if (global.decision.announced == LW_VERDICT_LEAK || global.last.verdict == LW_VERDICT_LEAK ||
        unmarked.t.decision.announced == LW_VERDICT_LEAK ||
        unmarked.t.last.verdict == LW_VERDICT_LEAK) {
        atomic_store(&host_cue, 0);
        return;
    }
    host_sites_onset = lw_attribution_judge(&host.t.last);
    atomic_store(&host_cue, isfinite(host_sites_onset) ? 1 : 0);
}

void lw_growth_host_get(lw_host_state *out, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lock);
    out->seen = host.seen;
    out->verdict = host.t.decision.announced;
    snprintf(out->reason, sizeof out->reason, "%s", host.t.decision.reason);
    out->last = host.t.last;
    out->points = host.t.series.points;
    if (bins && nbins) *nbins = lw_series_get(&host.t.series, bins, max);
    pthread_mutex_unlock(&lock);
}

/* LEAKWATCH_LIVE_HOLD: the marked steps a leak of PyTorch's tensor memory
 * holds before it is said while the run goes on (lw_tracked_alarm). The
 * device's own floor and the phases without marks keep the former rule
 * (lw_tracked_warning_due). */
static uint64_t live_hold(void) {
    long h = lw_opt_int(LW_OPT_LIVE_HOLD);
    return h > 0 ? (uint64_t)h : 0;
}

/* ---- the tensor series per device ---- */

/* The rule of every tracked series (tracked.h): confirmation, withdrawal
 * and the warning's delay; and the raw verdict the helper reads without the
 * lock. */
static void torch_evaluate(int d, torch_track *tr) {
    lw_tracked_evaluate(&tr->t);
    evaluations++;
    atomic_store_explicit(&tgrowing[d], tr->t.last.verdict == LW_VERDICT_LEAK,
                          memory_order_relaxed);
    if (lw_tracked_alarm(&tr->t, live_hold()))
        warning_due = 1;
    else if (tr->t.hold && tr->t.decision.announced == LW_VERDICT_LEAK)
        growing_due = 1;
}

static torch_track *torch_track_of(int d) {
    if (d < 0 || d >= LW_TORCH_MAX_DEVICES) return NULL;
    if (!ttracks[d]) {
        torch_track *tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        lw_tracked_init(&tr->t, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
        lw_tracked_init(&tr->pre, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
        tr->device_free = -1;
        ttracks[d] = tr;
    }
    return ttracks[d];
}

static int torch_low(const torch_track *tr, double v) {
    return tr->have_base && tr->high - tr->base >= RELEASE_MIN_BYTES &&
           v <= tr->base + 0.25 * (tr->high - tr->base);
}

static uint64_t tail_max(uint64_t points);

/* Before a point joins a device's tensor series: does a release begin, go
 * on, or end (watch_release's rule)? */
static void torch_watch_release(torch_track *tr, double v) {
    uint64_t points = tr->t.series.points;
    int low = torch_low(tr, v);
    if (tr->releasing && low && points - tr->pre.series.points >= tail_max(points)) {
        tr->releasing = 0; /* no teardown: the run goes on at the lower level */
        tr->base = tr->high = v;
    } else if (low && !tr->releasing && points > 1 && !torch_low(tr, tr->prev)) {
        lw_tracked_copy(&tr->pre, &tr->t);
        tr->releasing = 1;
    } else if (!low) {
        tr->releasing = 0;
        if (!tr->have_base || v < tr->base) tr->base = v;
        if (!tr->have_base || v > tr->high) tr->high = v;
        tr->have_base = 1;
    }
    tr->prev = v;
}

/* At the end of the run: a run that ended within a release is judged on
 * the data before it. */
static void torch_finish_release(torch_track *tr) {
    uint64_t points = tr->t.series.points;
    if (!tr->releasing || points - tr->pre.series.points > tail_max(points)) return;
    lw_tracked_copy(&tr->t, &tr->pre);
}

/* Called with `lock` held. The floor of a point is the bytes of live tensors
 * at the mark, its peak the reserved bytes. */
static void torch_add(const torch_point *pt) {
    torch_track *tr = torch_track_of(pt->device);
    if (!tr) return;
    tr->allocated = pt->allocated;
    tr->reserved = pt->reserved;
    if (pt->device_free >= 0) tr->device_free = pt->device_free;
    /* One point per step or interval: a second reading within the same
     * interval (the helper's clock and the worker's drift apart) only
     * updates the latest values; the series' x must rise. */
    if (tr->t.series.points && !(pt->x > tr->t.last_x)) return;
    torch_watch_release(tr, (double)pt->allocated);
    lw_tracked_add(&tr->t, pt->x, pt->t, (double)pt->allocated, (double)pt->reserved);
    if (lw_tracked_due(&tr->t)) torch_evaluate(pt->device, tr);
}

static void torch_drain(void) {
    pthread_mutex_lock(&ring_lock);
    int n = tring_len;
    memcpy(tbatch, tring, (size_t)n * sizeof *tbatch);
    tring_len = 0;
    pthread_mutex_unlock(&ring_lock);
    for (int i = 0; i < n; i++)
        torch_add(&tbatch[i]);
}

static void torch_forget(void) {
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        free(ttracks[d]);
        ttracks[d] = NULL;
        atomic_store(&tgrowing[d], 0);
    }
}

int lw_growth_torch_counters(int device, int64_t allocated, int64_t reserved, int64_t device_free) {
    if (device < 0 || device >= LW_TORCH_MAX_DEVICES || allocated < 0 || reserved < 0) return 0;
    torch_point pt = {device, 0, now_s(), allocated, reserved, device_free};
    pthread_mutex_lock(&ring_lock);
    /* Read at a step mark, or, in a run that marks none, once per time
     * interval (the helper's interval reader): x on the run's own scale. */
    pt.x = (double)lw_run_clock();
    if (tring_len == TORCH_RING) {
        /* The sampler is behind: the newest point replaces the last one. */
        tring_len--;
    }
    tring[tring_len++] = pt;
    pthread_mutex_unlock(&ring_lock);
    return atomic_load_explicit(&tgrowing[device], memory_order_relaxed) |
           atomic_load_explicit(&host_cue, memory_order_relaxed) << 1;
}

int lw_growth_torch_get(lw_torch_device_state *out, int max_devices, lw_bin *bins, int max,
                        int *nbins) {
    int k = 0;
    pthread_mutex_lock(&lock);
    for (int d = 0; d < LW_TORCH_MAX_DEVICES && k < max_devices; d++) {
        torch_track *tr = ttracks[d];
        if (!tr) continue;
        lw_torch_device_state *o = &out[k];
        o->device = d;
        o->verdict = tr->t.decision.announced;
        snprintf(o->reason, sizeof o->reason, "%s", tr->t.decision.reason);
        o->last = tr->t.last;
        o->points = tr->t.series.points;
        o->first_leak_step = lw_tracked_first_leak_step(&tr->t);
        o->allocated = tr->allocated;
        o->reserved = tr->reserved;
        o->device_free = tr->device_free;
        o->bin_width = tr->t.series.width;
        if (bins && nbins) nbins[k] = lw_series_get(&tr->t.series, bins + (size_t)k * max, max);
        k++;
    }
    pthread_mutex_unlock(&lock);
    return k;
}

/* ---- the verdict ---- */

/* The detector and decision on the global series, without judging sites. */
static void evaluate_global_only(void) {
    int was_leak = global.decision.announced == LW_VERDICT_LEAK;
    lw_tracked_evaluate(&global);
    if (global.last.verdict != LW_VERDICT_LEAK && !was_leak) sites_onset = NAN;
    evaluations++;
}

static int is_low(int64_t floor);

/* A release is under way: the newest points are low, or the memory live now
 * (this thread may take steps in well after they were made) is back near the
 * start-up level while the newest point is not. */
static int releasing(void) {
    if (release_tail) return 1;
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    return global.series.points > 1 && is_low(c.live_bytes) && !is_low(prev_floor);
}

static void evaluate(void) {
    evaluate_global_only();
    /* Sites are judged as soon as the floor grows (not only once a leak is
     * confirmed), and not during a release: what a site kept is known only
     * while it still holds it. */
    if ((global.decision.announced == LW_VERDICT_LEAK || global.last.verdict == LW_VERDICT_LEAK) &&
        !releasing())
        evaluate_sites();
    if (lw_tracked_alarm(&global, 0)) warning_due = 1;
}

static int is_low(int64_t floor) {
    return have_base && high_floor - base_floor >= RELEASE_MIN_BYTES &&
           (double)floor <= base_floor + 0.25 * (high_floor - base_floor);
}

/* The longest drop taken for a teardown: the last quarter of the run (at
 * least 4 points). Longer, the run goes on at the lower level. */
static uint64_t tail_max(uint64_t points) {
    return points / 4 > 4 ? points / 4 : 4;
}

/* Before pt joins the global series: does a release begin, go on, or end? */
static void watch_release(const point *pt) {
    int low = is_low(pt->floor);
    uint64_t points = global.series.points;
    if (release_tail && low && points - pre.t.series.points >= tail_max(points)) {
        /* No teardown: a drop the run stays below (a start-up spike freed,
         * a phase that ended). Its level is the new start. */
        release_tail = 0;
        base_floor = high_floor = (double)pt->floor;
        prev_floor = pt->floor;
        return;
    }
    if (low && !release_tail && points > 1 && !is_low(prev_floor)) {
        lw_tracked_copy(&pre.t, &global);
        pre.floor = prev_floor;
        release_tail = 1;
    } else if (!low) {
        release_tail = 0;
        if (points >= 1) {
            double f = (double)pt->floor;
            if (!have_base || f < base_floor) base_floor = f;
            if (!have_base || f > high_floor) high_floor = f;
            have_base = 1;
        }
    }
    prev_floor = pt->floor;
}

/* Evaluations follow the data, not the clock: at every point early on, then
 * every 1/32 of the points seen. The verdict thus does not depend on how
 * promptly this thread was scheduled. */
static void add_point(const point *pt) {
    int host_evaluated = host_add(pt);
    watch_release(pt);
    lw_tracked_add(&global, pt->x, pt->t, (double)pt->floor, (double)pt->peak);
    if (lw_tracked_due(&global)) evaluate();
    if (host_evaluated) host_judge_sites();
}

/* Which sites the unmarked phases' growth comes from: those that keep
 * memory from allocations made since the first such phase began. */
static void judge_sites_unmarked(void) {
    const lw_tracked *u = &unmarked.t;
    lw_attribution_judge_phases(unmarked.since_step, (double)u->series.points, u->last.slope);
}

static void gap_evaluate(void) {
    const lw_tracked *u = &unmarked.t;
    lw_tracked_evaluate(&unmarked.t);
    evaluations++;
    if (global.decision.announced != LW_VERDICT_LEAK && global.last.verdict != LW_VERDICT_LEAK &&
        (u->decision.announced == LW_VERDICT_LEAK || u->last.verdict == LW_VERDICT_LEAK) &&
        !releasing())
        judge_sites_unmarked();
    if (lw_tracked_alarm(&unmarked.t, 0)) warning_due = 1;
}

/* The sampling period of a phase without marks: half a mean step (the time
 * between marks; a forward pass takes about a third of a training step),
 * within [5 ms, LEAKWATCH_INTERVAL_MS], so that a validation pass as long as
 * a few dozen training steps still gives the detector its points. 0: not a
 * marked run yet. */
static double gap_period(void) {
    if (!marker_mode || unmarked.marks < 2) return 0;
    double interval = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    double mean = (unmarked.last_mark_t - unmarked.first_mark_t) / (double)(unmarked.marks - 1);
    return fmin(interval, fmax(0.005, mean / 2));
}

/* The worker woke without a mark in a marked run: a phase without marks
 * once none has come for 8 mean steps (and 3 periods); then one point per
 * period. */
static void gap_interval(void) {
    double now = now_s(), period = gap_period();
    if (!(period > 0)) return;
    double mean = (unmarked.last_mark_t - unmarked.first_mark_t) / (double)(unmarked.marks - 1);
    if (now - unmarked.last_mark_t < fmax(3 * period, 8 * mean)) return;
    if (unmarked.active && now - unmarked.last_point_t < 0.95 * period) return;
    /* A period without a CUDA allocation or free: idle on the GPU. When the
     * run ends idle (a slow interpreter teardown, CPU work), the series from
     * before that idle stretch is kept aside (lw_growth_finish). */
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    uint64_t events = c.alloc_count + c.free_count;
    int idle = unmarked.active && events == unmarked.events;
    unmarked.events = events;
    if (!idle) {
        unmarked.idle_tail = 0;
    } else if (!unmarked.idle_tail) {
        lw_tracked_copy(&unmarked_busy, &unmarked.t);
        unmarked.idle_tail = 1;
    }
    if (!unmarked.active) {
        unmarked.active = 1;
        if (!unmarked.started) unmarked.started = 1, unmarked.since_step = lw_step_now();
    }
    int64_t floor, peak;
    lw_totals_take_floor_peak(&floor, &peak);
    unmarked.last_point_t = now;
    unmarked.period = period;
    lw_tracked_add(&unmarked.t, unmarked.t.last_x + 1, now, (double)floor, (double)peak);
    lw_attribution_point((double)lw_run_clock(), now);
    if (lw_tracked_due(&unmarked.t)) gap_evaluate();
}

double lw_growth_unmarked_period(void) {
    pthread_mutex_lock(&lock);
    double p = finished ? 0 : gap_period();
    pthread_mutex_unlock(&lock);
    return p;
}

static int drain_ring(void);

int lw_growth_unmarked_tick(void) {
    pthread_mutex_lock(&lock);
    /* The marks queued since (a mark wakes no one once the pace is known):
     * the time of the newest decides whether a phase without marks began. */
    int marks = drain_ring();
    if (marker_mode && !finished) gap_interval();
    pthread_mutex_unlock(&lock);
    return marks;
}

static void gap_forget(void) {
    lw_tracked_init(&unmarked.t, 0);
    unmarked.active = unmarked.started = 0;
    unmarked.since_step = 0;
    unmarked.first_mark_t = unmarked.last_mark_t = 0;
    unmarked.marks = 0;
    unmarked.last_point_t = unmarked.period = 0;
    unmarked.events = 0;
    unmarked.idle_tail = 0;
}

static void forget_history(void);

/* Moves the queued steps into the series. Called with `lock` held. */
static int drain_ring(void) {
    if (finished) return 0;
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
    torch_drain();
    if (!n) return 0;
    if (!unmarked.marks) unmarked.first_mark_t = batch[0].t;
    unmarked.marks += (uint64_t)n;
    unmarked.last_mark_t = batch[n - 1].t;
    unmarked.active = 0;
    for (int i = 0; i < n; i++)
        add_point(&batch[i]);
    lw_attribution_point(batch[n - 1].x, batch[n - 1].t);
    return n;
}

static void close_interval(void) {
    point pt;
    lw_totals_take_floor_peak(&pt.floor, &pt.peak);
    lw_totals_take_host_floor_peak(&pt.host_floor, &pt.host_peak);
    pt.x = (double)lw_intervals_close();
    pt.t = now_s();
    add_point(&pt);
    lw_attribution_point(pt.x, pt.t);
}

static void forget_history(void) {
    torch_forget();
    host_forget();
    host_sites_onset = NAN;
    atomic_store(&host_cue, 0);
    lw_tracked_forget(&global);
    sites_onset = NAN;
    release_tail = have_base = 0;
    base_floor = high_floor = 0;
    prev_floor = 0;
    released_bytes = -1;
    decided_at_exit = 0;
    finished = 0;
    gap_forget();
    lw_attribution_forget();
}

void lw_growth_init(void) {
    pthread_mutex_lock(&lock);
    lw_tracked_init(&global, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
    lw_tracked_init(&host.t, LW_TRACKED_RISES);
    forget_history();
    marker_mode = 0;
    atomic_store(&steps_are_calls, 0);
    lw_intervals_reset();
    pthread_mutex_lock(&ring_lock);
    ring_len = 0;
    tring_len = 0;
    marker_requested = 0;
    marks_queued = 0;
    wake_asked = 0;
    pthread_mutex_unlock(&ring_lock);
    pthread_mutex_unlock(&lock);
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

void lw_growth_update(int close_interval_now) {
    pthread_mutex_lock(&lock);
    drain_ring();
    if (close_interval_now && !marker_mode && !finished) close_interval();
    if (close_interval_now && marker_mode && !finished) gap_interval();
    pthread_mutex_unlock(&lock);
}

int lw_growth_take_growing(void) {
    pthread_mutex_lock(&lock);
    int due = growing_due;
    growing_due = 0;
    pthread_mutex_unlock(&lock);
    return due;
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
    lw_totals_take_host_floor_peak(&pt.host_floor, &pt.host_peak);
    pt.x = (double)lw_step_now();
    pt.t = now_s();
    pthread_mutex_lock(&ring_lock);
    if (!marker_requested) {
        /* Intervals queued before the first mark are dropped with the time
         * series (drain_ring). */
        marker_requested = 1;
        ring_len = 0;
        tring_len = 0; /* PyTorch's counters read per interval, too */
    }
    if (ring_len == RING) {
        /* The sampler is behind: fold this step into the newest one. */
        point *q = &ring[RING - 1];
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
    if (marks_queued < WAKE_MARKS || ring_len >= RING / 2) {
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

void lw_growth_flush(void) {
    pthread_mutex_lock(&lock);
    drain_ring();
    /* One more point for each site: the state now. */
    if (!finished) lw_attribution_point((double)lw_run_clock(), now_s());
    if (lw_tracked_changed(&global))
        evaluate();
    else if (global.decision.announced == LW_VERDICT_LEAK)
        evaluate_sites(); /* sites may have gained points since */
    if (host.seen && lw_tracked_changed(&host.t)) lw_tracked_evaluate(&host.t);
    host_judge_sites();
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++)
        if (ttracks[d] && lw_tracked_changed(&ttracks[d]->t)) torch_evaluate(d, ttracks[d]);
    pthread_mutex_unlock(&lock);
}

/* The end of the global series (lw_growth_finish): returns the floor a
 * release at the end came down from, -1: none. */
static int64_t finish_global(int64_t tail_floor) {
    int64_t from = -1;
    uint64_t points = global.series.points;
    uint64_t tail = release_tail ? points - pre.t.series.points : 0;
    if (release_tail && tail <= tail_max(points)) {
        /* The run ended within a release: the verdict is the one from
         * before it, on the data before it. */
        from = pre.floor;
        lw_tracked_copy(&global, &pre.t);
        if (lw_tracked_changed(&global)) evaluate_global_only();
    } else if (!release_tail && points > 1 && is_low(tail_floor) && !is_low(prev_floor)) {
        from = prev_floor;
        if (lw_tracked_changed(&global)) evaluate_global_only();
    } else if (lw_tracked_changed(&global)) {
        evaluate();
    } else if (global.decision.announced == LW_VERDICT_LEAK ||
               global.last.verdict == LW_VERDICT_LEAK) {
        if (!releasing()) evaluate_sites();
    }
    if (from >= 0) released_bytes = from > tail_floor ? from - tail_floor : 0;
    if (lw_tracked_final(&global)) {
        decided_at_exit = 1;
        if (from < 0 && !releasing()) evaluate_sites();
    }
    return from;
}

/* The end of the unmarked phases' series (lw_growth_finish). */
static void finish_unmarked(void) {
    lw_tracked *u = &unmarked.t;
    if (u->series.points && lw_tracked_changed(u)) gap_evaluate();
    int busy_leak = 0;
    if (unmarked.idle_tail && u->decision.announced != LW_VERDICT_LEAK &&
        u->last.verdict != LW_VERDICT_LEAK) {
        /* The run ended idle on the GPU: the growth of the unmarked phases
         * before that stands (an idle stretch is no evidence against it). */
        lw_tracked_evaluate(&unmarked_busy);
        lw_tracked_final(&unmarked_busy);
        if (unmarked_busy.decision.announced == LW_VERDICT_LEAK) {
            lw_tracked_copy(u, &unmarked_busy);
            busy_leak = 1;
        } else if (unmarked_busy.last.verdict == LW_VERDICT_INCONCLUSIVE &&
                   unmarked_busy.rises >= 2) {
            /* It grew, over too few intervals to decide, then went idle:
             * the flat idle stretch would make it "no leak" (a short phase
             * after slow marked steps starts late: 8 mean steps). */
            lw_tracked_copy(u, &unmarked_busy);
            u->last.reason = "the floor grew until the job went idle on the GPU, over too few "
                             "intervals to decide";
            snprintf(u->decision.reason, sizeof u->decision.reason, "%s", u->last.reason);
        }
    }
    if ((lw_tracked_final(u) || busy_leak) && global.decision.announced != LW_VERDICT_LEAK) {
        decided_at_exit = 1;
        if (!releasing()) judge_sites_unmarked();
    }
}

void lw_growth_finish(void) {
    pthread_mutex_lock(&lock);
    if (finished) {
        pthread_mutex_unlock(&lock);
        return;
    }
    drain_ring();
    finished = 1;
    /* What the job did after its last mark (or interval): a release there
     * shows only in the floor since then. */
    int64_t tail_floor, tail_peak;
    lw_totals_take_floor_peak(&tail_floor, &tail_peak);
    lw_attribution_point((double)lw_run_clock(), now_s());
    finish_global(tail_floor);
    finish_unmarked();
    if (host.seen && lw_tracked_changed(&host.t)) lw_tracked_evaluate(&host.t);
    lw_tracked_final(&host.t);
    host_judge_sites();
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        torch_track *tr = ttracks[d];
        if (!tr) continue;
        torch_finish_release(tr);
        if (lw_tracked_changed(&tr->t)) torch_evaluate(d, tr);
        lw_tracked_final(&tr->t);
    }
    pthread_mutex_unlock(&lock);
}

/* Once PyTorch's counters arrive they decide: a leak on any device (the
 * fastest-growing one is named), no leak when every device says so,
 * otherwise inconclusive (the device holding the most tensors is named) --
 * unless leakwatch's own series has a confirmed leak the tensors do not
 * show. Called with `lock` held. */
static void torch_primary(lw_growth_state *st) {
    int pick = -1, all_no = 1;
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        const torch_track *tr = ttracks[d];
        if (!tr || !tr->t.series.points) continue;
        if (tr->t.decision.announced != LW_VERDICT_NO_LEAK) all_no = 0;
        if (pick < 0) {
            pick = d;
            continue;
        }
        const torch_track *p = ttracks[pick];
        int leak = tr->t.decision.announced == LW_VERDICT_LEAK,
            pleak = p->t.decision.announced == LW_VERDICT_LEAK;
        if (leak != pleak ? leak
            : leak        ? tr->t.last.slope > p->t.last.slope
                          : tr->allocated > p->allocated)
            pick = d;
    }
    if (pick < 0) return;
    const lw_tracked *tr = &ttracks[pick]->t;
    /* Memory PyTorch's tensors do not account for (an extension's or a
     * library's own cudaMalloc, NCCL buffers, a cache that keeps growing)
     * still shows in leakwatch's own series: a leak confirmed there stands
     * when the tensors do not grow. */
    if (tr->decision.announced != LW_VERDICT_LEAK && global.decision.announced == LW_VERDICT_LEAK)
        return;
    st->signal = "torch_allocated";
    st->signal_device = pick;
    st->verdict = tr->decision.announced == LW_VERDICT_LEAK ? LW_VERDICT_LEAK
                  : all_no                                  ? LW_VERDICT_NO_LEAK
                                                            : LW_VERDICT_INCONCLUSIVE;
    st->last = tr->last;
    /* Never before step (or interval) 1, as cap_onset says it. */
    if (isfinite(st->last.onset_x) && st->last.onset_x < 1) {
        st->last.onset_x = st->last.onset_lo = 1;
        if (isfinite(st->last.onset_hi) && st->last.onset_hi < 1) st->last.onset_hi = 1;
    }
    st->first_leak_step = lw_tracked_first_leak_step(tr);
    if (st->verdict == tr->decision.announced)
        snprintf(st->reason, sizeof st->reason, "tensor memory: %.140s", tr->decision.reason);
    else /* no leak on this device, but not yet on every device */
        snprintf(st->reason, sizeof st->reason,
                 "tensor memory: no leak on device %d, other devices not decided yet", pick);
}

/* The cycles of the series the verdict comes from (PyTorch's counters on
 * the device that decided, else leakwatch's own floor); none for a verdict
 * from the phases without marks. Called with `lock` held. */
static void growth_cycles(lw_growth_state *st) {
    lw_cycles_init(&st->cycles_raw);
    st->cycles_signal = NULL;
    if (st->from_unmarked || (st->memory_kind && !strcmp(st->memory_kind, "pinned_host"))) return;
    const lw_cycles *c = &global.cycles;
    const char *signal = "live_bytes";
    if (st->signal_device >= 0 && ttracks[st->signal_device]) {
        c = &ttracks[st->signal_device]->t.cycles;
        signal = "torch_allocated";
    }
    st->cycles_raw = *c;
    st->cycles_signal = signal;
}

/* While the run goes on, an announced leak whose live alarm is not raised
 * (lw_tracked_alarm: not held long enough yet, or its latest evaluation
 * holds back) is said as growth, not as a leak, in every view (the live
 * line, top, Prometheus, a dump): no alarm the end of the run takes back.
 * The end of the run decides on all its data. Called with `lock` held. */
static void not_yet_a_leak(lw_growth_state *st) {
    st->growing = 0;
    if (finished || st->verdict != LW_VERDICT_LEAK) return;
    const lw_tracked *t = &global;
    if (st->from_unmarked)
        t = &unmarked.t;
    else if (st->signal_device >= 0 && ttracks[st->signal_device])
        t = &ttracks[st->signal_device]->t;
    if (t->alarm || !t->hold) return;
    st->verdict = LW_VERDICT_INCONCLUSIVE;
    st->growing = 1;
    char why[sizeof st->reason];
    snprintf(why, sizeof why, "%s", st->reason);
    snprintf(st->reason, sizeof st->reason, "growing, not yet a leak (%.130s)", why);
}

/* Steps are calls of the job's outermost nn.Module (an inference server,
 * an evaluation loop): between them the job does not work on the GPU (the
 * time after its last request, its teardown), so a floor flat there is no
 * evidence of a clean run. */
void lw_growth_steps_are_calls(void) {
    atomic_store(&steps_are_calls, 1);
}

/* One verdict over every kind of memory the job can run out of: a leak of
 * pinned host memory (host RAM, its own series) is the run's leak when the
 * device's memory gives none. Returns 1 when it gave the verdict. Called
 * with `lock` held. */
static int host_primary(lw_growth_state *st) {
    if (st->verdict == LW_VERDICT_LEAK || !host.seen ||
        host.t.decision.announced != LW_VERDICT_LEAK)
        return 0;
    st->verdict = LW_VERDICT_LEAK;
    st->memory_kind = "pinned_host";
    st->signal = "pinned_host";
    st->signal_device = -1;
    st->from_unmarked = 0;
    st->last = host.t.last;
    double hi = isfinite(st->last.onset_hi) ? st->last.onset_hi : st->last.onset_x;
    if (isfinite(st->last.onset_x) && isfinite(host_sites_onset) && host_sites_onset <= hi)
        st->last.onset_x = st->last.onset_lo = st->last.onset_hi = host_sites_onset;
    if (isfinite(st->last.onset_x) && st->last.onset_x < 1)
        st->last.onset_x = st->last.onset_lo = 1;
    st->first_leak_step = lw_tracked_first_leak_step(&host.t);
    st->step_source = marker_mode ? "marker" : "time";
    st->steps = marker_mode ? lw_step_now() : lw_intervals_now();
    snprintf(st->reason, sizeof st->reason, "pinned host memory: %.130s", host.t.decision.reason);
    return 1;
}

void lw_growth_get(lw_growth_state *st, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lock);
    memset(st, 0, sizeof *st);
    st->memory_kind = "device";
    st->host_available = st->host_total = -1;
    st->verdict = global.decision.announced;
    st->last = global.last;
    cap_onset(&st->last);
    snprintf(st->reason, sizeof st->reason, "%s", global.decision.reason);
    st->signal = "live_bytes";
    st->signal_device = -1;
    st->first_leak_step = lw_tracked_first_leak_step(&global);
    st->withdrawn = global.decision.withdrawn;
    st->released_bytes = released_bytes;
    st->decided_at_exit = decided_at_exit;
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++)
        if (ttracks[d]) st->withdrawn += ttracks[d]->t.decision.withdrawn;
    torch_primary(st);
    st->step_source = marker_mode ? "marker" : "time";
    st->steps = marker_mode ? lw_step_now() : lw_intervals_now();
    const lw_tracked *u = &unmarked.t;
    st->unmarked_intervals = u->series.points;
    const lw_series *shown = &global.series;
    /* The unmarked phases give the verdict, in intervals, when they grow
     * and the marked steps do not, or when they are clean and cover more of
     * the run than the marked steps, which cannot decide (a few training
     * steps, then a long validation). */
    int from_unmarked =
        marker_mode &&
        ((st->verdict != LW_VERDICT_LEAK && u->decision.announced == LW_VERDICT_LEAK) ||
         (st->verdict == LW_VERDICT_INCONCLUSIVE && u->decision.announced == LW_VERDICT_NO_LEAK &&
          !steps_are_calls && u->series.points > st->steps));
    if (from_unmarked) {
        st->verdict = u->decision.announced;
        st->signal = "live_bytes";
        st->signal_device = -1;
        st->last = u->last;
        st->step_source = "time";
        st->steps = u->series.points;
        st->first_leak_step = lw_tracked_first_leak_step(u);
        st->from_unmarked = 1;
        st->interval_s = unmarked.period;
        snprintf(st->reason, sizeof st->reason, "while no step was marked: %.130s",
                 u->decision.reason);
        shown = &u->series;
    }
    if (host_primary(st)) shown = &host.t.series;
    st->evaluations = evaluations;
    lw_device_last_mem(&st->device_free, &st->device_total);
    st->available = st->device_free;
    if (st->signal_device >= 0 && ttracks[st->signal_device] &&
        ttracks[st->signal_device]->device_free >= 0) {
        /* What PyTorch can still use on that device: the driver's free
         * memory plus what its cache holds that no tensor uses. */
        const torch_track *tr = ttracks[st->signal_device];
        st->available =
            tr->device_free + (tr->reserved > tr->allocated ? tr->reserved - tr->allocated : 0);
    }
    if (!strcmp(st->memory_kind, "pinned_host")) {
        /* Pinned host memory is page-locked RAM: what runs out is the
         * host's memory (read now). */
        lw_host_mem(&st->host_available, &st->host_total);
        st->available = st->host_available;
    }
    growth_cycles(st);
    if (!st->from_unmarked) st->interval_s = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    st->bin_width = shown->width;
    if (bins && nbins) *nbins = lw_series_get(shown, bins, max);
    not_yet_a_leak(st);
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
    atomic_store(&steps_are_calls, 0);
    atomic_store(&oom_seen, 0);
    lw_attribution_forget_parent();
    marker_mode = 0;
    ring_len = 0;
    tring_len = 0;
    marker_requested = 0;
    marks_queued = 0;
    wake_asked = 0;
    lw_intervals_reset();
    lw_device_forget();
    evaluations = 0;
    global.points_at_eval = 0;
    warning_due = 0;
    growing_due = 0;
}
