/* SPDX-License-Identifier: Apache-2.0 */
/* The device's floor (growth_global.h). */
#include "growth_global.h"
#include "growth_run.h"

#include "attribution.h"

#include "totals.h"

#include <math.h>

/* The floor of the CUDA allocations leakwatch records itself, per step (or
 * interval): the run's verdict, with the job's pace and its cycles. */
lw_tracked lw_growth_global;

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
static struct {
    lw_tracked t;  /* the global series and verdict before the drop */
    int64_t floor; /* the floor of the last point before the drop */
} pre;
static int release_tail; /* the newest points are low, after a high one */
static double base_floor, high_floor;
static int have_base;
static int64_t prev_floor;
static int64_t released_bytes = -1; /* set by lw_growth_finish: released at exit */

/* ---- the sites the growth comes from (attribution.h) ----
 * The onset as the leaking sites show it (steps, from 1); NAN: no leaking
 * site. */
static double sites_onset = NAN;

/* Judges the sites on the global series' growth. */
static void evaluate_sites(void) {
    sites_onset = lw_attribution_judge(&lw_growth_global.last);
}

/* A bin's range that holds the sites' onset becomes that step. */
void lw_growth_cap_onset(lw_growth *g) {
    if (!isfinite(g->onset_x)) return;
    double hi = isfinite(g->onset_hi) ? g->onset_hi : g->onset_x;
    if (isfinite(sites_onset) && sites_onset <= hi)
        g->onset_x = g->onset_lo = g->onset_hi = sites_onset;
    if (g->onset_x < 1) g->onset_x = g->onset_lo = 1;
    if (isfinite(g->onset_hi) && g->onset_hi < g->onset_lo) g->onset_hi = g->onset_lo;
}

/* The detector and decision on the global series, without judging sites. */
static void evaluate_global_only(void) {
    int was_leak = lw_growth_global.decision.announced == LW_VERDICT_LEAK;
    lw_tracked_evaluate(&lw_growth_global);
    if (lw_growth_global.last.verdict != LW_VERDICT_LEAK && !was_leak) sites_onset = NAN;
    lw_growth_r.evaluations++;
}

static int is_low(int64_t floor) {
    return have_base && high_floor - base_floor >= LW_RELEASE_MIN_BYTES &&
           (double)floor <= base_floor + 0.25 * (high_floor - base_floor);
}

/* A release is under way: the newest points are low, or the memory live now
 * (this thread may take steps in well after they were made) is back near the
 * start-up level while the newest point is not. */
int lw_growth_releasing(void) {
    if (release_tail) return 1;
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    return lw_growth_global.series.points > 1 && is_low(c.live_bytes) && !is_low(prev_floor);
}

static void evaluate(void) {
    evaluate_global_only();
    /* Sites are judged as soon as the floor grows (not only once a leak is
     * confirmed), and not during a release: what a site kept is known only
     * while it still holds it. */
    if ((lw_growth_global.decision.announced == LW_VERDICT_LEAK ||
         lw_growth_global.last.verdict == LW_VERDICT_LEAK) &&
        !lw_growth_releasing())
        evaluate_sites();
    if (lw_tracked_alarm(&lw_growth_global, 0)) lw_growth_r.warning_due = 1;
}

/* The longest drop taken for a teardown: the last quarter of the run (at
 * least 4 points). Longer, the run goes on at the lower level. */
uint64_t lw_growth_release_tail_max(uint64_t points) {
    return points / 4 > 4 ? points / 4 : 4;
}

/* Before pt joins the global series: does a release begin, go on, or end? */
static void watch_release(const lw_growth_point *pt) {
    int low = is_low(pt->floor);
    uint64_t points = lw_growth_global.series.points;
    if (release_tail && low && points - pre.t.series.points >= lw_growth_release_tail_max(points)) {
        /* No teardown: a drop the run stays below (a start-up spike freed,
         * a phase that ended). Its level is the new start. */
        release_tail = 0;
        base_floor = high_floor = (double)pt->floor;
        prev_floor = pt->floor;
        return;
    }
    if (low && !release_tail && points > 1 && !is_low(prev_floor)) {
        lw_tracked_copy(&pre.t, &lw_growth_global);
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
void lw_growth_global_add(const lw_growth_point *pt) {
    watch_release(pt);
    lw_tracked_add(&lw_growth_global, pt->x, pt->t, (double)pt->floor, (double)pt->peak);
    if (lw_tracked_due(&lw_growth_global)) evaluate();
}

void lw_growth_global_flush(void) {
    if (lw_tracked_changed(&lw_growth_global))
        evaluate();
    else if (lw_growth_global.decision.announced == LW_VERDICT_LEAK)
        evaluate_sites(); /* sites may have gained points since */
}

int64_t lw_growth_global_finish(int64_t tail_floor) {
    int64_t from = -1;
    uint64_t points = lw_growth_global.series.points;
    uint64_t tail = release_tail ? points - pre.t.series.points : 0;
    if (release_tail && tail <= lw_growth_release_tail_max(points)) {
        /* The run ended within a release: the verdict is the one from
         * before it, on the data before it. */
        from = pre.floor;
        lw_tracked_copy(&lw_growth_global, &pre.t);
        if (lw_tracked_changed(&lw_growth_global)) evaluate_global_only();
    } else if (!release_tail && points > 1 && is_low(tail_floor) && !is_low(prev_floor)) {
        from = prev_floor;
        if (lw_tracked_changed(&lw_growth_global)) evaluate_global_only();
    } else if (lw_tracked_changed(&lw_growth_global)) {
        evaluate();
    } else if (lw_growth_global.decision.announced == LW_VERDICT_LEAK ||
               lw_growth_global.last.verdict == LW_VERDICT_LEAK) {
        if (!lw_growth_releasing()) evaluate_sites();
    }
    if (from >= 0) released_bytes = from > tail_floor ? from - tail_floor : 0;
    if (lw_tracked_final(&lw_growth_global)) {
        lw_growth_r.decided_at_exit = 1;
        if (from < 0 && !lw_growth_releasing()) evaluate_sites();
    }
    return from;
}

int64_t lw_growth_released_bytes(void) {
    return released_bytes;
}

void lw_growth_global_init(void) {
    lw_tracked_init(&lw_growth_global, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
}

void lw_growth_global_forget(void) {
    lw_tracked_forget(&lw_growth_global);
    sites_onset = NAN;
    release_tail = have_base = 0;
    base_floor = high_floor = 0;
    prev_floor = 0;
    released_bytes = -1;
}
