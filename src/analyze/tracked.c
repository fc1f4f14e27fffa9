/* SPDX-License-Identifier: Apache-2.0 */
#include "tracked.h"

#include "options.h"

#include <math.h>
#include <string.h>

void lw_tracked_init(lw_tracked *t, int flags) {
    t->flags = flags;
    lw_series_init(&t->series, t->bins, LW_TRACKED_BINS);
    lw_tracked_forget(t);
}

void lw_tracked_forget(lw_tracked *t) {
    lw_series_reset(&t->series);
    memset(&t->last, 0, sizeof t->last);
    lw_decision_init(&t->decision);
    t->last_x = 0;
    t->next_eval_at = 0;
    t->due_at = 0;
    t->rest_until = 0;
    lw_pace_reset(&t->pace);
    lw_cycles_init(&t->cycles);
    t->alarm = 0;
    t->hold = 0;
    t->rises = 0;
    t->high = 0;
}

void lw_tracked_add(lw_tracked *t, double x, double time, double floor, double peak) {
    lw_series_add(&t->series, x, time, floor, peak);
    if (t->flags & LW_TRACKED_CYCLES) lw_cycles_add(&t->cycles, x, floor);
    if (t->flags & LW_TRACKED_PACE) lw_pace_add(&t->pace, x, time);
    if (t->series.points > 1 && floor > t->high) t->rises++;
    if (floor > t->high) t->high = floor;
    t->last_x = x;
}

int lw_tracked_due(lw_tracked *t) {
    uint64_t points = t->series.points;
    if (points < t->next_eval_at) return 0;
    uint64_t gap = points / 32;
    t->next_eval_at = points + (gap ? gap : 1);
    /* At rest: this point of the 1/32 schedule is passed over, the
     * schedule itself kept, so that the evaluations after the series
     * leaves its rest fall on the points they always did. */
    if (points < t->rest_until) return 0;
    t->due_at = points;
    return 1;
}

/* A series at rest (lw_tracked_due): its latest evaluation found no leak
 * and no trend at all (the trend test's p at or above the level an
 * announced leak is kept at), and no leak is announced. */
static int at_rest(const lw_tracked *t) {
    return t->last.verdict == LW_VERDICT_NO_LEAK && t->decision.announced == LW_VERDICT_NO_LEAK &&
           t->last.p_value >= lw_detect_defaults().alpha_keep;
}

/* After an evaluation that lw_tracked_due asked for: a series at rest is
 * next evaluated at the first point of the 1/32 schedule after another
 * 1/LW_TRACKED_REST_PART of its points, any other at the next point of
 * that schedule. The choice follows the data only, as the schedule itself
 * does. */
static void schedule_next(lw_tracked *t) {
    uint64_t points = t->series.points;
    if (t->due_at != points) return;
    t->rest_until = points >= 32 && at_rest(t) ? points + points / LW_TRACKED_REST_PART : 0;
}

int lw_tracked_changed(const lw_tracked *t) {
    return t->series.points != t->points_at_eval;
}

/* Per second at the job's pace: the slope per step times the steps per
 * second of the series' own recent points (lw_pace_rate), the same measure
 * for the live line and the exit line; the detector's own figure (from its
 * bins) only while too few points give a pace. */
static void at_pace(lw_growth *g, const lw_pace *p) {
    double rate = lw_pace_rate(p);
    if (isfinite(rate) && rate > 0 && isfinite(g->slope)) g->bytes_per_second = g->slope * rate;
}

lw_verdict lw_tracked_evaluate(lw_tracked *t) {
    lw_bin bins[LW_TRACKED_BINS + 1];
    int n = lw_series_get(&t->series, bins, LW_TRACKED_BINS + 1);
    lw_detect_params p = lw_detect_defaults();
    lw_detect(bins, n, &p, &t->last);
    if (t->flags & LW_TRACKED_PACE) at_pace(&t->last, &t->pace);
    if ((t->flags & LW_TRACKED_RISES) && t->last.verdict == LW_VERDICT_LEAK &&
        t->rises < LW_TRACKED_MIN_RISES) {
        t->last.verdict = LW_VERDICT_INCONCLUSIVE;
        t->last.reason = "the floor reached a new high in fewer than 8 steps: a cache of whole "
                         "blocks fills in a few; a leak keeps rising";
    }
    t->points_at_eval = t->series.points;
    lw_verdict v = lw_decision_update(&t->decision, &t->last, t->series.points, t->last_x,
                                      (int)lw_opt_int(LW_OPT_CONFIRM));
    schedule_next(t);
    return v;
}

int lw_tracked_final(lw_tracked *t) {
    return lw_decision_final(&t->decision, &t->last, t->last_x);
}

int lw_tracked_warning_due(const lw_tracked *t) {
    return t->decision.announced == LW_VERDICT_LEAK && t->series.points >= 64 &&
           t->series.points >= 2 * t->decision.raw_leak_since;
}

int lw_tracked_alarm(lw_tracked *t, uint64_t hold) {
    t->hold = hold;
    if (t->decision.announced != LW_VERDICT_LEAK) {
        t->alarm = 0;
        return 0;
    }
    if (t->alarm) return 1;
    int due;
    if (!hold) {
        due = lw_tracked_warning_due(t);
    } else {
        /* In steps (x), not points: a series sampled sparsely (PyTorch's
         * counters read every few steps once the job is under way) holds
         * fewer points than steps. */
        double onset = isfinite(t->last.onset_x) && t->last.onset_x > 0 ? t->last.onset_x : 0;
        due = t->last.verdict == LW_VERDICT_LEAK && t->series.points >= 64 &&
              t->last_x - onset >= (double)hold;
    }
    if (due) t->alarm = 1;
    return due;
}

int64_t lw_tracked_first_leak_step(const lw_tracked *t) {
    return isnan(t->decision.first_leak_x) ? -1 : (int64_t)llround(t->decision.first_leak_x);
}

void lw_tracked_copy(lw_tracked *dst, const lw_tracked *src) {
    dst->series = src->series;
    dst->series.bins = dst->bins;
    memcpy(dst->bins, src->bins, sizeof(lw_bin) * (size_t)src->series.len);
    dst->last = src->last;
    dst->decision = src->decision;
    dst->last_x = src->last_x;
    dst->next_eval_at = src->next_eval_at;
    dst->due_at = src->due_at;
    dst->rest_until = src->rest_until;
    dst->points_at_eval = src->points_at_eval;
    dst->alarm = src->alarm;
    dst->hold = src->hold;
    dst->rises = src->rises;
    dst->high = src->high;
}
