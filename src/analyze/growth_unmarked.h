/* SPDX-License-Identifier: Apache-2.0 */
/* The phases without step marks inside a marked job (growth_run.h lists
 * growth's files): a validation loop makes no optimizer step, so growth
 * there never reaches the marked series; the worker samples the floor into
 * a series of their own (lw_growth_unmarked_tick). Under lw_growth_lock. */
#ifndef LW_GROWTH_UNMARKED_H
#define LW_GROWTH_UNMARKED_H

#include "growth_queue.h"
#include "tracked.h"

/* The phases' series: x their intervals, numbered from 1. */
const lw_tracked *lw_growth_unmarked_series(void);
/* Seconds per interval of that series (its sampling period). */
double lw_growth_unmarked_interval_s(void);

/* Marks taken in (batch, n of them, n > 0): the job's pace, and the end of a
 * phase without marks. */
void lw_growth_unmarked_marks(const lw_growth_point *batch, int n);
/* The worker woke without a mark in a marked run: a phase without marks
 * once none has come for 8 mean steps; then one point per period. */
void lw_growth_unmarked_interval(void);
/* The end of the run (lw_growth_finish). */
void lw_growth_unmarked_finish(void);
/* Forgets the series and the pace. */
void lw_growth_unmarked_forget(void);

#endif
