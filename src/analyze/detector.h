/* SPDX-License-Identifier: Apache-2.0 */
/* The verdict: does the floor of live memory grow steadily, step after step?
 *
 * lw_detect is a pure function of a series of bins (series.h), so it can be
 * tested on known data; lw_decision turns its successive evaluations into
 * the verdict a user sees. The method (see docs/detection.md):
 *   - the floor's noise is estimated robustly at the current bin width (from
 *     second differences of the bins, which a trend or a smooth warm-up
 *     hardly moves);
 *   - the trend test is Mann–Kendall over a window of the series (variance
 *     corrected for serial correlation, Hamed & Rao), the rate Theil–Sen
 *     with Sen's 95% interval. The window is the longest of {all bins, the
 *     newest 3/4, the newest half} whose growth no guard rejects, so a
 *     steady leak is tested on all of its data;
 *   - the guards that tell warm-ups, caches filling up and sawtooths from a
 *     leak are tests with a stated error rate (alpha_guard): they overrule
 *     the trend only when the data reject steady growth at that level
 *     (deceleration: a quadratic term significantly negative; stopped: the
 *     newest third's slope significantly below the window's; cycle: a fall
 *     beyond what the noise allows, unless the low points between falls
 *     rise significantly);
 *   - a new leak verdict also needs the newest half of the window to rise
 *     (alpha_recent): growth that is significant only in older data is not
 *     yet a leak ("inconclusive", with the steps still needed).
 * Announcing a leak needs the verdict on several consecutive evaluations;
 * once announced it is withdrawn only when the evidence goes: the trend is
 * no longer significant at alpha_keep, or a guard overrules it
 * (lw_decision). */
#ifndef LW_DETECTOR_H
#define LW_DETECTOR_H

#include "series.h"
#include "verdict.h"

#include <stdint.h>

typedef struct {
    int min_points;           /* fewer bins than this: inconclusive */
    int min_window;           /* bins tested, at least */
    double alpha;             /* trend test, one-sided, over the three windows together */
    double alpha_recent;      /* the newest half of the window must rise at this level */
    double alpha_guard;       /* a guard overrules the trend test at this level */
    double alpha_enter;       /* a guard at this level holds back a new leak verdict */
    double alpha_fallback;    /* the same, once older data showed deceleration */
    double alpha_keep;        /* an announced leak stands while the trend's p stays below */
    double alpha_keep_recent; /* ... and, in a newer window, its newest half's */
    /* 1: every statistic computed, even on a window whose floor does not
     * move (lw_detect_flat), whose results are otherwise known without it:
     * the tests compare the two bit for bit. 0 (the defaults): known. */
    int no_shortcut;
} lw_detect_params;

lw_detect_params lw_detect_defaults(void);

/* The guards, by name (lw_growth.overruled_by). */
#define LW_GUARD_DECELERATION "deceleration"
#define LW_GUARD_STOPPED "stopped"
#define LW_GUARD_CYCLE "cycle"

typedef struct {
    lw_verdict verdict; /* this evaluation alone (before confirmation) */
    double slope;       /* bytes per step (x unit) over the window, Theil–Sen */
    double lo, hi;      /* its 95% confidence interval */
    double p_value;     /* Mann–Kendall, one-sided, corrected */
    double onset_x;     /* where the growth began (hinge fit over all bins) */
    double bytes_per_second;
    int window;         /* bins tested */
    const char *reason; /* one phrase: why this verdict */
    /* Added with the noise-aware decision (all zero/NULL in a zeroed struct). */
    int supports_leak;         /* 1: an already announced leak still stands */
    const char *overruled_by;  /* the guard that overruled a significant trend, or NULL */
    const char *guard_why;     /* what that guard saw */
    double guard_p;            /* its test's p-value */
    double p_recent;           /* Mann–Kendall over the newest half of the window */
    double onset_lo, onset_hi; /* the steps the onset's bin covers (onset_x = onset_lo);
                                  0, 0 in a zeroed struct: unknown */
    double noise_bin;          /* robust sd of one bin's floor, bytes */
    double noise_step;         /* the same for one step's floor (noise_bin * sqrt(width)) */
    double min_rate;           /* the smallest rate this run can call now, bytes per x unit */
    double more_steps;         /* x units still needed at the current rate; NAN: unknown */
} lw_growth;

/* Evaluates bins[0..n). Returns 0; out is always filled. */
int lw_detect(const lw_bin *bins, int n, const lw_detect_params *p, lw_growth *out);

/* 1 when the floors of bins[0..n) do not move in a way lw_detect knows the
 * statistics of without computing them (every floor the same whole number
 * of bytes, below 2^40, on steps that rise): a series that lw_detect then
 * evaluates in O(n), with the same result, bit for bit. lw_detect asks it
 * of each window it tests, so a series that moved only in its oldest bins
 * gets its newer windows the same way. */
int lw_detect_flat(const lw_bin *bins, int n);

/* Successive evaluations -> the announced verdict. */
typedef struct {
    lw_verdict announced;
    int consecutive;         /* evaluations in a row that said leak */
    uint64_t raw_leak_since; /* points when that run began */
    double first_leak_x;     /* x where the current leak verdict was reached; NAN: none */
    uint64_t withdrawn;      /* leak verdicts reached, then withdrawn */
    char reason[160];        /* agrees with `announced` */
} lw_decision;

void lw_decision_init(lw_decision *d);
/* Takes one evaluation g of a series holding `points` points whose newest
 * bin is at x; confirm: evaluations in a row a new leak needs. Returns the
 * announced verdict. */
lw_verdict lw_decision_update(lw_decision *d, const lw_growth *g, uint64_t points, double x,
                              int confirm);
/* At the end of the run, on all its data: the confirmation rule exists to
 * keep a running verdict from flipping early, and there is no later to wait
 * for. A leak that the last evaluation g decides (on the whole series, every
 * guard passed) is announced. Returns 1 when that changed the verdict. */
int lw_decision_final(lw_decision *d, const lw_growth *g, double x);

#endif
