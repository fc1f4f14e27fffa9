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

#endif
