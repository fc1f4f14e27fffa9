/* SPDX-License-Identifier: Apache-2.0 */
/* The device's floor (growth_run.h lists growth's files): the series of the
 * CUDA allocations leakwatch records itself, per step (or interval), the
 * run's verdict unless another series gives it (growth_signal.c), with the
 * job's pace and its cycles; a release at its end; the sites its growth
 * comes from (attribution.h). Everything here runs under lw_growth_lock. */
#ifndef LW_GROWTH_GLOBAL_H
#define LW_GROWTH_GLOBAL_H

#include "growth_queue.h"
#include "tracked.h"

#include <stdint.h>

/* The series and its announced verdict; other series read it. */
extern lw_tracked lw_growth_global;

/* An empty series (lw_growth_init). */
void lw_growth_global_init(void);
/* Forgets the points, the verdict, the release and the sites' onset. */
void lw_growth_global_forget(void);

/* Before pt joins the series: a release; then the point, evaluated when
 * due (lw_tracked_due), its sites judged as soon as the floor grows. */
void lw_growth_global_add(const lw_growth_point *pt);
/* Evaluates once more if points came (lw_growth_flush); else, under an
 * announced leak, judges the sites again (they may have gained points). */
void lw_growth_global_flush(void);
/* The end of the run (lw_growth_finish), the floor since the last point
 * given: returns the floor a release at the end came down from, -1: none. */
int64_t lw_growth_global_finish(int64_t tail_floor);

/* A release is under way: the newest points are low, or the memory live
 * now is back near the start-up level while the newest point is not.
 * Sites are not judged then (what a site kept is known only while it
 * still holds it). */
int lw_growth_releasing(void);

/* The bytes released after the last step (or in the last intervals) when
 * the run ended within a release; -1 before lw_growth_finish or none. */
int64_t lw_growth_released_bytes(void);

/* The onset said, in every view: never later than where a leaking site's
 * growth demonstrably began, never before step 1. */
void lw_growth_cap_onset(lw_growth *g);

#endif
