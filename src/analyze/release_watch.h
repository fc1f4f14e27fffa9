/* SPDX-License-Identifier: Apache-2.0 */
/* A release at the end of the run, watched in one tracked series (the
 * device's floor, growth_global.c; PyTorch's tensors on a device,
 * growth_torch.c), by one rule.
 *
 * Memory a job frees at teardown (interpreter exit, a final cleanup, the
 * leaking function returned) after its last step mark, or in the last
 * intervals of a run without marks, says nothing about its steady state:
 * growth established before it stands. A point is low when its level is
 * back near the start-up level: within a quarter of the way from the lowest
 * level seen to the highest. When the newest points are low after a high
 * one (releasing), the series and verdict from before that drop are kept
 * aside (pre); at the end, a run that ended within that drop is judged on
 * them (lw_release_ended_within). A drop longer than the last quarter of
 * the run is no teardown: the run goes on at the lower level, its new start.
 *
 * No lock: the caller holds the series' own. */
#ifndef LW_RELEASE_WATCH_H
#define LW_RELEASE_WATCH_H

#include "tracked.h"

#include <stdint.h>

/* A drop smaller than this between the lowest and highest level is none. */
#define LW_RELEASE_MIN_BYTES 4096.0

typedef struct {
    lw_tracked pre;    /* the series and verdict before the drop */
    int64_t pre_level; /* the level of the last point before the drop */
    int releasing;     /* the newest points are low, after a high one */
    int have_base;
    double base, high; /* the lowest and highest level seen */
    int64_t prev;      /* the level of the newest point */
    /* The series' first point sets no base: it may predate the first
     * allocation (the device's floor). */
    int skip_first;
} lw_release_watch;

/* An empty watch (no point yet). */
void lw_release_init(lw_release_watch *w, int skip_first);
/* Forgets the levels (pre is kept: it is read only while releasing). */
void lw_release_forget(lw_release_watch *w);

/* 1 when level v is back near the start-up level. */
int lw_release_low(const lw_release_watch *w, int64_t v);

/* The longest drop taken for a teardown: the last quarter of the run (at
 * least 4 points) of a series of `points` points. */
uint64_t lw_release_tail_max(uint64_t points);

/* Before a point of level v joins t: does a release begin (t is kept aside
 * in pre), go on, or end? */
void lw_release_point(lw_release_watch *w, const lw_tracked *t, int64_t v);

/* At the end of the run: when the run ended within a release, t becomes the
 * series before it (pre) and 1 is returned; else 0, t unchanged. */
int lw_release_ended_within(lw_release_watch *w, lw_tracked *t);

#endif
