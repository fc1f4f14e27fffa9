#include "detector.h"

#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *lw_verdict_name(lw_verdict v) {
    return v == LW_VERDICT_LEAK ? "leak" : v == LW_VERDICT_NO_LEAK ? "no_leak" : "inconclusive";
}

lw_detect_params lw_detect_defaults(void) {
    lw_detect_params p = {
        .min_points = 24,
        .min_window = 16,
        .alpha = 1e-3,
        .third_ratio = 0.5,
    };
    return p;
}

/* Where growth began: walking back from the window over older bins, the
 * earliest from which every bin still lies on the window's line (within the
 * noise of the window's residuals). A leak that starts late after a warm-up
 * gets its own start, not the warm-up's. */
static double find_onset(const double *x, const double *y, int n, int w, double slope,
                         double intercept) {
    double *r = malloc(sizeof(double) * (size_t)w);
    if (!r) return x[n - w];
    for (int i = 0; i < w; i++)
        r[i] = fabs(y[n - w + i] - (intercept + slope * x[n - w + i]));
    double mad = lw_median(r, w);
    free(r);
    /* At least one bin's worth of growth: bins average over their steps. */
    double dx = (x[n - 1] - x[n - w]) / (w > 1 ? w - 1 : 1);
    double tol = 4 * 1.4826 * mad;
    if (tol < slope * dx) tol = slope * dx;
    double onset = x[n - w];
    for (int i = n - w; i >= 0; i--) {
        if (fabs(y[i] - (intercept + slope * x[i])) > tol) break;
        onset = x[i];
    }
    return onset;
}

static int decelerates(const double *x, const double *y, int n) {
    lw_quad_fit q;
    if (n < 8 || lw_quadratic_fit(x, y, n, &q) != 0) return 0;
    if (!(q.c < 0) || !(q.se_c > 0 ? -q.c / q.se_c > 3 : 1)) return 0;
    /* The fit's slope at the window's start and end (the fit is in x). */
    double s0 = q.b + 2 * q.c * x[0], s1 = q.b + 2 * q.c * x[n - 1];
    return s0 > 0 && s1 < 0.9 * s0;
}

/* The low points of the floor must rise too: the minimum of the window's
 * newest third above that of its oldest third by a good part of what the
 * slope predicts. A cache that fills and is freed again (a sawtooth) returns
 * to the same low points; a leak, alone or under a sawtooth, lifts them. */
static int low_points_rise(const double *x, const double *y, int w, double slope) {
    int third = w / 3;
    if (third < 2) return 1;
    double m1 = INFINITY, m3 = INFINITY;
    for (int i = 0; i < third; i++) {
        if (y[i] < m1) m1 = y[i];
        if (y[w - 1 - i] < m3) m3 = y[w - 1 - i];
    }
    double expect = slope * (x[w - third] - x[0]);
    return m3 - m1 >= 0.5 * expect;
}

/* Tests the newest w bins at significance alpha; fills out. */
static void test_window(const lw_bin *bins, const double *x, const double *y, int n, int w,
                        double alpha, const lw_detect_params *p, lw_growth *out) {
    const double *wx = x + (n - w), *wy = y + (n - w);
    out->window = w;
    out->verdict = LW_VERDICT_NO_LEAK;
    lw_theil_sen_result ts;
    lw_mk_result mk;
    double ess;
    if (lw_theil_sen(wx, wy, w, 0.95, &ts) != 0 ||
        lw_mann_kendall_corrected(wx, wy, w, &mk, &ess) != 0) {
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->reason = "the statistics could not be computed";
        return;
    }
    out->slope = ts.slope;
    out->lo = ts.lo;
    out->hi = ts.hi;
    out->p_value = mk.p_increasing;
    const lw_bin *b0 = &bins[n - w], *b1 = &bins[n - 1];
    if (b1->t > b0->t && b1->x > b0->x)
        out->bytes_per_second = ts.slope * (b1->x - b0->x) / (b1->t - b0->t);
    if (!(mk.p_increasing < alpha) || !(ts.lo > 0) || !(ts.slope > 0)) {
        out->reason = "no significant growth of the floor";
        return;
    }
    int third = w / 3 >= 6 ? w / 3 : 6;
    lw_theil_sen_result t3;
    if (third <= w && lw_theil_sen(wx + (w - third), wy + (w - third), third, 0.95, &t3) == 0 &&
        !(t3.slope >= p->third_ratio * ts.slope)) {
        out->reason = "growth has slowed or stopped (newest third)";
        return;
    }
    if (decelerates(wx, wy, w)) {
        out->reason = "growth is decelerating (warm-up or a cache filling up)";
        return;
    }
    if (!low_points_rise(wx, wy, w, ts.slope)) {
        out->reason = "the floor falls back to where it was (a cycle, not a leak)";
        return;
    }
    out->verdict = LW_VERDICT_LEAK;
    out->reason = "the floor grows steadily";
    out->onset_x = find_onset(x, y, n, w, ts.slope, ts.intercept);
}

/* The newest half of the series is tested: warm-up falls out of it as the
 * run goes on. (Shorter windows would call late leaks sooner, but they also
 * see the rising half of every sawtooth: measured, they cost more than they
 * bring; see the accuracy benchmark.) */
int lw_detect(const lw_bin *bins, int n, const lw_detect_params *p, lw_growth *out) {
    memset(out, 0, sizeof *out);
    out->verdict = LW_VERDICT_INCONCLUSIVE;
    out->p_value = NAN;
    out->slope = out->lo = out->hi = out->onset_x = out->bytes_per_second = NAN;
    if (n < p->min_points) {
        out->reason = "too few steps yet";
        return 0;
    }
    double *x = malloc(sizeof(double) * (size_t)n * 2);
    if (!x) {
        out->reason = "out of memory";
        return 0;
    }
    double *y = x + n;
    for (int i = 0; i < n; i++)
        x[i] = bins[i].x, y[i] = bins[i].floor;

    int w = n / 2 > p->min_window ? n / 2 : p->min_window;
    test_window(bins, x, y, n, w < n ? w : n, p->alpha, p, out);
    free(x);
    return 0;
}
