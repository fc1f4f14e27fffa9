/* The verdict: does the floor of live memory grow steadily, step after step?
 *
 * A pure function of a series of bins (series.h), so it can be tested on
 * known data. The method (README, "Leak detection"):
 *   - test the recent part of the series only (the newest half), so warm-up
 *     is left behind;
 *   - Mann–Kendall for "is it going up", with its variance corrected for
 *     serial correlation (Hamed & Rao), Theil–Sen for "how fast", with Sen's
 *     95% confidence interval; both shrug off outliers and spikes;
 *   - growth that stops is not a leak: the newest third must still rise at a
 *     comparable slope, growth must not decelerate (a quadratic fit with a
 *     significantly negative curvature whose slope falls by more than 10%
 *     across the window), and the low points of the floor must rise as well
 *     (a sawtooth, a cache filled then freed, returns to the same low points;
 *     a leak under a sawtooth still lifts them).
 * Announcing a leak also needs the verdict to hold on several consecutive
 * evaluations: that is growth.c's part. */
#ifndef LW_DETECTOR_H
#define LW_DETECTOR_H

#include "series.h"

typedef enum {
    LW_VERDICT_INCONCLUSIVE = 0,
    LW_VERDICT_LEAK = 1,
    LW_VERDICT_NO_LEAK = 2
} lw_verdict;

const char *lw_verdict_name(lw_verdict v);

typedef struct {
    int min_points;     /* fewer bins than this: inconclusive */
    int min_window;     /* bins tested, at least */
    double alpha;       /* Mann–Kendall one-sided significance */
    double third_ratio; /* newest third's slope / window slope, at least */
} lw_detect_params;

lw_detect_params lw_detect_defaults(void);

typedef struct {
    lw_verdict verdict;
    double slope;   /* bytes per step (x unit) over the window, Theil–Sen */
    double lo, hi;  /* its 95% confidence interval */
    double p_value; /* Mann–Kendall, one-sided, corrected */
    double onset_x; /* where the growth began (hinge fit over all bins) */
    double bytes_per_second;
    int window;         /* bins tested */
    const char *reason; /* one phrase: why this verdict */
} lw_growth;

/* Evaluates bins[0..n). Returns 0; out is always filled. */
int lw_detect(const lw_bin *bins, int n, const lw_detect_params *p, lw_growth *out);

#endif
