/* SPDX-License-Identifier: Apache-2.0 */
/* A tracked series: one signal's floor series (series.h), the detector's
 * latest evaluation of it (lw_detect) and the verdict announced from the
 * successive evaluations (lw_decision). growth keeps one per signal: the
 * device's live bytes, pinned host memory, PyTorch's tensors on each device
 * and the phases of a marked run without marks; it routes each point to its
 * series and decides which series the run's verdict comes from.
 *
 * Every series follows one rule: evaluated at each point early on, then
 * every 1/32 of the points seen (lw_tracked_due), every 1/8 while the
 * series is at rest (its latest evaluation: no leak, no trend at all), so
 * a verdict does not depend on how promptly the worker was scheduled; a
 * leak needs
 * LEAKWATCH_CONFIRM agreeing evaluations (lw_decision_update), and the
 * warning on stderr waits longer (lw_tracked_warning_due).
 *
 * No lock, no thread, no I/O: the caller holds its own lock. */
#ifndef LW_TRACKED_H
#define LW_TRACKED_H

#include "cycles.h"
#include "detector.h"
#include "series.h"

#include <stdint.h>

#define LW_TRACKED_BINS 256

/* What a series keeps beside its bins. */
enum {
    /* The job's pace (lw_pace): the rate per second is the slope per step
     * times the steps per second of the series' own recent points. Without
     * it, the detector's own figure from the bins stands. */
    LW_TRACKED_PACE = 1,
    /* The growth released at each cycle's end (cycles.h), from the raw
     * points. */
    LW_TRACKED_CYCLES = 2,
    /* Growth by whole blocks (pinned host memory: PyTorch's caching host
     * allocator gives each pinned tensor its own block and never frees
     * one): a leak needs the floor to reach a new high in at least
     * LW_TRACKED_MIN_RISES points. A cache of a few blocks (DDP's staging
     * buffers, a ring of offload buffers) fills in fewer rises, at times
     * the job's threads decide; a kept buffer per step rises at each step. */
    LW_TRACKED_RISES = 4,
};
#define LW_TRACKED_MIN_RISES 8
/* A series at rest is evaluated about every 1/LW_TRACKED_REST_PART of its
 * points (from 32 points; at the first point of the 1/32 schedule after
 * that): a job that does not leak pays for about a quarter of the
 * evaluations. Once an evaluation sees a trend (p below alpha_keep), any
 * growth, or a leak, the next comes at the next point of the 1/32 schedule,
 * every evaluation from then on falling on the points of a series never at
 * rest, so confirmation is as fast as before; only the first evaluation to
 * see growth may come up to about 1/8 of the points later. */
#define LW_TRACKED_REST_PART 8

typedef struct {
    lw_series series;
    lw_bin bins[LW_TRACKED_BINS];
    lw_growth last;       /* the latest evaluation */
    lw_decision decision; /* the announced verdict, from the evaluations */
    double last_x;        /* the newest point's step (or interval) */
    uint64_t next_eval_at, points_at_eval;
    uint64_t due_at;     /* points when lw_tracked_due last said due */
    uint64_t rest_until; /* at rest: the 1/32 schedule's points before this are passed over */
    int flags;           /* LW_TRACKED_* */
    lw_pace pace;        /* with LW_TRACKED_PACE */
    lw_cycles cycles;    /* with LW_TRACKED_CYCLES */
    int alarm;           /* the announced leak may be said live (lw_tracked_alarm) */
    uint64_t hold;       /* the hold lw_tracked_alarm was last called with */
    uint64_t rises;      /* with LW_TRACKED_RISES: points whose floor was a new high */
    double high;         /* the highest floor so far */
} lw_tracked;

/* An empty series keeping what flags name. */
void lw_tracked_init(lw_tracked *t, int flags);

/* Forgets the points, the evaluation, the verdict, the pace and the cycles.
 * The count of points at the last evaluation stays: a series emptied after
 * an evaluation counts as changed (lw_tracked_changed) until its next
 * evaluation. */
void lw_tracked_forget(lw_tracked *t);

/* One point: the floor and peak of a step (or interval) x that ended at
 * `time` seconds since the start. */
void lw_tracked_add(lw_tracked *t, double x, double time, double floor, double peak);

/* 1 when the points added call for an evaluation; the next one is then due
 * after another 1/32 of the points seen (at every point early on), or 1/8
 * when that evaluation finds the series at rest (lw_tracked_evaluate). */
int lw_tracked_due(lw_tracked *t);

/* 1 when points came since the last evaluation. */
int lw_tracked_changed(const lw_tracked *t);

/* Runs the detector on the series (t->last) and takes its verdict into the
 * announced one (t->decision). Returns the announced verdict. */
lw_verdict lw_tracked_evaluate(lw_tracked *t);

/* At the end of the run: lw_decision_final on the latest evaluation.
 * Returns 1 when that changed the verdict. */
int lw_tracked_final(lw_tracked *t);

/* 1 when an announced leak has run long enough to be said on stderr (64
 * points, and twice the points it was first seen at): a job's log is no
 * place for a warm-up mistaken for a leak. */
int lw_tracked_warning_due(const lw_tracked *t);

/* The live alarm (issue 38): a leak is said while the run goes on (the
 * live line, top, Prometheus) only on evidence the end of the run would
 * also accept. With hold > 0 (a series of marked steps): an announced leak
 * whose latest evaluation is itself a leak (trend, newest half rising, no
 * slowdown or cycle guard objecting even at 1e-3: what lw_decision_final
 * accepts) and that has grown for `hold` steps (x units) since its onset: a
 * fill that stops within them is not said (the guards see it stop), a late
 * onset is said as soon as it is announced once it is that old.
 * hold 0: lw_tracked_warning_due's rule, and the verdict is said as it is
 * announced (no "growing, not yet a leak"). Latched in t->alarm until the
 * verdict is withdrawn; returns 1 while it stands. */
int lw_tracked_alarm(lw_tracked *t, uint64_t hold);

/* The step (or interval) where the announced leak was reached; -1: none. */
int64_t lw_tracked_first_leak_step(const lw_tracked *t);

/* Copies src's points, evaluation and verdict into dst (a copy kept aside,
 * or put back); dst's flags, pace and cycles stay dst's own. */
void lw_tracked_copy(lw_tracked *dst, const lw_tracked *src);

#endif
