/* SPDX-License-Identifier: Apache-2.0 */
/* A release at the end of the run (release_watch.h says the rule). */
#include "release_watch.h"

void lw_release_init(lw_release_watch *w, int skip_first) {
    lw_tracked_init(&w->pre, 0);
    w->pre_level = 0;
    w->skip_first = skip_first;
    lw_release_forget(w);
}

void lw_release_forget(lw_release_watch *w) {
    w->releasing = w->have_base = 0;
    w->base = w->high = 0;
    w->prev = 0;
}

int lw_release_low(const lw_release_watch *w, int64_t v) {
    return w->have_base && w->high - w->base >= LW_RELEASE_MIN_BYTES &&
           (double)v <= w->base + 0.25 * (w->high - w->base);
}

uint64_t lw_release_tail_max(uint64_t points) {
    return points / 4 > 4 ? points / 4 : 4;
}

void lw_release_point(lw_release_watch *w, const lw_tracked *t, int64_t v) {
    int low = lw_release_low(w, v);
    uint64_t points = t->series.points;
    if (w->releasing && low && points - w->pre.series.points >= lw_release_tail_max(points)) {
        /* No teardown: a drop the run stays below (a start-up spike freed,
         * a phase that ended). Its level is the new start. */
        w->releasing = 0;
        w->base = w->high = (double)v;
    } else if (low && !w->releasing && points > 1 && !lw_release_low(w, w->prev)) {
        lw_tracked_copy(&w->pre, t);
        w->pre_level = w->prev;
        w->releasing = 1;
    } else if (!low) {
        w->releasing = 0;
        if (points >= 1 || !w->skip_first) {
            double f = (double)v;
            if (!w->have_base || f < w->base) w->base = f;
            if (!w->have_base || f > w->high) w->high = f;
            w->have_base = 1;
        }
    }
    w->prev = v;
}

int lw_release_ended_within(lw_release_watch *w, lw_tracked *t) {
    uint64_t points = t->series.points;
    if (!w->releasing || points - w->pre.series.points > lw_release_tail_max(points)) return 0;
    /* The run ended within a release: the verdict is the one from before
     * it, on the data before it. */
    lw_tracked_copy(t, &w->pre);
    return 1;
}
