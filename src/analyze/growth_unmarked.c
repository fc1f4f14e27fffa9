/* SPDX-License-Identifier: Apache-2.0 */
/* ---- phases without step marks inside a marked job ----
 * A validation loop makes no optimizer step, so no mark arrives while it
 * runs, and growth there never reaches the marked series. Once no mark has
 * come for 8 mean steps (the mean time between marks), the worker samples
 * the floor every half mean step (gap_period) into a series of its own,
 * across all such phases; its verdict (same rule) decides when the marked
 * series has no leak (lw_growth_get), in those intervals (growth.step_source
 * "time"). */
#include "growth.h"
#include "growth_global.h"
#include "growth_run.h"
#include "growth_unmarked.h"

#include "attribution.h"

#include "options.h"
#include "runstate.h"
#include "totals.h"

#include <math.h>
#include <stdio.h>

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

const lw_tracked *lw_growth_unmarked_series(void) {
    return &unmarked.t;
}

double lw_growth_unmarked_interval_s(void) {
    return unmarked.period;
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
    lw_growth_r.evaluations++;
    if (lw_growth_global.decision.announced != LW_VERDICT_LEAK &&
        lw_growth_global.last.verdict != LW_VERDICT_LEAK &&
        (u->decision.announced == LW_VERDICT_LEAK || u->last.verdict == LW_VERDICT_LEAK) &&
        !lw_growth_releasing())
        judge_sites_unmarked();
    if (lw_tracked_alarm(&unmarked.t, 0)) lw_growth_r.warning_due = 1;
}

/* The sampling period of a phase without marks: half a mean step (the time
 * between marks; a forward pass takes about a third of a training step),
 * within [5 ms, LEAKWATCH_INTERVAL_MS], so that a validation pass as long as
 * a few dozen training steps still gives the detector its points. 0: not a
 * marked run yet. */
static double gap_period(void) {
    if (!lw_growth_r.marker_mode || unmarked.marks < 2) return 0;
    double interval = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    double mean = (unmarked.last_mark_t - unmarked.first_mark_t) / (double)(unmarked.marks - 1);
    return fmin(interval, fmax(0.005, mean / 2));
}

void lw_growth_unmarked_marks(const lw_growth_point *batch, int n) {
    if (!unmarked.marks) unmarked.first_mark_t = batch[0].t;
    unmarked.marks += (uint64_t)n;
    unmarked.last_mark_t = batch[n - 1].t;
    unmarked.active = 0;
}

/* Once none has come for 8 mean steps (and 3 periods); then one point per
 * period. */
void lw_growth_unmarked_interval(void) {
    double now = lw_growth_now_s(), period = gap_period();
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
    pthread_mutex_lock(&lw_growth_lock);
    double p = lw_growth_r.finished ? 0 : gap_period();
    pthread_mutex_unlock(&lw_growth_lock);
    return p;
}

void lw_growth_unmarked_forget(void) {
    lw_tracked_init(&unmarked.t, 0);
    unmarked.active = unmarked.started = 0;
    unmarked.since_step = 0;
    unmarked.first_mark_t = unmarked.last_mark_t = 0;
    unmarked.marks = 0;
    unmarked.last_point_t = unmarked.period = 0;
    unmarked.events = 0;
    unmarked.idle_tail = 0;
}

void lw_growth_unmarked_finish(void) {
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
    if ((lw_tracked_final(u) || busy_leak) &&
        lw_growth_global.decision.announced != LW_VERDICT_LEAK) {
        lw_growth_r.decided_at_exit = 1;
        if (!lw_growth_releasing()) judge_sites_unmarked();
    }
}
