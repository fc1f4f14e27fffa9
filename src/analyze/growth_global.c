/* SPDX-License-Identifier: Apache-2.0 */
/* The device's floor (growth_global.h). */
#include "growth_global.h"
#include "growth_run.h"
#include "release_watch.h"

#include "attribution.h"

#include "totals.h"

#include <math.h>

/* The floor of the CUDA allocations leakwatch records itself, per step (or
 * interval): the run's verdict, with the job's pace and its cycles. */
lw_tracked lw_growth_global;

/* A release at the end of the run (release_watch.h): the series' first
 * point, which may predate the first allocation, sets no base. */
static lw_release_watch rw = {.skip_first = 1};
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

/* A release is under way: the newest points are low, or the memory live now
 * (this thread may take steps in well after they were made) is back near the
 * start-up level while the newest point is not. */
int lw_growth_releasing(void) {
    if (rw.releasing) return 1;
    lw_counts c = lw_totals_get(-2, LW_KIND_COUNT);
    return lw_growth_global.series.points > 1 && lw_release_low(&rw, c.live_bytes) &&
           !lw_release_low(&rw, rw.prev);
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

/* Evaluations follow the data, not the clock: at every point early on, then
 * every 1/32 of the points seen. The verdict thus does not depend on how
 * promptly this thread was scheduled. */
void lw_growth_global_add(const lw_growth_point *pt) {
    lw_release_point(&rw, &lw_growth_global, pt->floor);
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
    if (lw_release_ended_within(&rw, &lw_growth_global)) {
        /* The run ended within a release: the verdict is the one from
         * before it, on the data before it. */
        from = rw.pre_level;
        if (lw_tracked_changed(&lw_growth_global)) evaluate_global_only();
    } else if (!rw.releasing && points > 1 && lw_release_low(&rw, tail_floor) &&
               !lw_release_low(&rw, rw.prev)) {
        from = rw.prev;
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
    lw_release_init(&rw, 1);
}

void lw_growth_global_forget(void) {
    lw_tracked_forget(&lw_growth_global);
    sites_onset = NAN;
    lw_release_forget(&rw);
    released_bytes = -1;
}
