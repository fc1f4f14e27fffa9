/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded time series: a fixed number of bins, each the mean of a run of
 * consecutive points; when all are full, neighbours merge and each bin then
 * stands for twice as many points. Memory stays constant for a job of any
 * length, and the most recent history keeps the same resolution as the old.
 * Bins hold means, not minima: the growth-detection note measured minima to
 * double the time to a verdict under noise. */
#ifndef LW_SERIES_H
#define LW_SERIES_H

#include <stdint.h>

typedef struct {
    double x;     /* mean step (or interval) number */
    double t;     /* mean time, seconds since start */
    double floor; /* mean of the points' floors */
    double peak;  /* largest peak */
    uint32_t n;   /* points in this bin */
} lw_bin;

typedef struct {
    lw_bin *bins;
    int cap;        /* even */
    int len;        /* full bins */
    uint32_t width; /* points per full bin */
    lw_bin pending; /* the bin being filled (sums while n < width) */
    uint64_t points;
} lw_series;

void lw_series_init(lw_series *s, lw_bin *storage, int cap);
void lw_series_reset(lw_series *s);
void lw_series_add(lw_series *s, double x, double t, double floor, double peak);
/* Copies the full bins and, if it holds any point, the pending one (as a
 * mean); returns how many. */
int lw_series_get(const lw_series *s, lw_bin *out, int max);

/* The job's pace: the steps (or intervals) per second of its recent points,
 * from the points' own times (a step mark's time is taken on the marking
 * thread, so a worker that takes them in late does not move it). Kept apart
 * from the bins, whose oldest hold the start-up's slow first steps and whose
 * width changes between the live line and the exit. */
#define LW_PACE_POINTS 1025
typedef struct {
    double x[LW_PACE_POINTS], t[LW_PACE_POINTS];
    int head, len; /* ring: the newest point at head - 1 */
    uint64_t points;
} lw_pace;

void lw_pace_reset(lw_pace *p);
void lw_pace_add(lw_pace *p, double x, double t);
/* Units per second over the newest half of the points (at most the newest
 * 1024 intervals): the start-up is never in it. The longest and the shortest
 * tenth of those intervals are left out (a thread descheduled for a few
 * milliseconds in a run of very fast steps, or two marks in a row), then
 * units over seconds of the rest. NAN with fewer than 2 intervals. The live
 * line and the exit line of a job that keeps its pace get the same. */
double lw_pace_rate(const lw_pace *p);

#endif
