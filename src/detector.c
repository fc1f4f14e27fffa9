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
        .max_drawdown = 0.5,
    };
    return p;
}

/* Where growth began: the hinge x0 of y = a + b·max(0, x − x0) that fits
 * best (least squares, b > 0), over the candidate x0 at each bin. */
static double find_onset(const double *x, const double *y, int n) {
    double best_sse = INFINITY, best = x[0];
    for (int k = 0; k < n - 2; k++) {
        double x0 = x[k];
        double sh = 0, sy = 0, shh = 0, shy = 0;
        for (int i = 0; i < n; i++) {
            double h = x[i] > x0 ? x[i] - x0 : 0;
            sh += h, sy += y[i], shh += h * h, shy += h * y[i];
        }
        double den = n * shh - sh * sh;
        if (den <= 0) continue;
        double b = (n * shy - sh * sy) / den;
        double a = (sy - b * sh) / n;
        if (b <= 0) continue;
        double sse = 0;
        for (int i = 0; i < n; i++) {
            double h = x[i] > x0 ? x[i] - x0 : 0;
            double r = y[i] - a - b * h;
            sse += r * r;
        }
        /* Ties go to the earliest: a straight line from the start is onset 0. */
        if (sse < best_sse * (1 - 1e-9)) best_sse = sse, best = x0;
    }
    return best;
}

static int decelerates(const double *x, const double *y, int n) {
    lw_quad_fit q;
    if (n < 8 || lw_quadratic_fit(x, y, n, &q) != 0) return 0;
    if (!(q.c < 0) || !(q.se_c > 0 ? -q.c / q.se_c > 3 : 1)) return 0;
    /* The fit's slope at the window's start and end (the fit is in x). */
    double s0 = q.b + 2 * q.c * x[0], s1 = q.b + 2 * q.c * x[n - 1];
    return s0 > 0 && s1 < 0.9 * s0;
}

/* The deepest fall of y below an earlier value of y. */
static double drawdown(const double *y, int n) {
    double top = y[0], dd = 0;
    for (int i = 1; i < n; i++) {
        if (y[i] > top) top = y[i];
        if (top - y[i] > dd) dd = top - y[i];
    }
    return dd;
}

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
    if (w > n) w = n;
    const double *wx = x + (n - w), *wy = y + (n - w);
    out->window = w;

    lw_theil_sen_result ts;
    lw_mk_result mk;
    double ess;
    if (lw_theil_sen(wx, wy, w, 0.95, &ts) != 0 ||
        lw_mann_kendall_corrected(wx, wy, w, &mk, &ess) != 0) {
        out->reason = "the statistics could not be computed";
        goto done;
    }
    out->slope = ts.slope;
    out->lo = ts.lo;
    out->hi = ts.hi;
    out->p_value = mk.p_increasing;
    const lw_bin *b0 = &bins[n - w], *b1 = &bins[n - 1];
    if (b1->t > b0->t && b1->x > b0->x)
        out->bytes_per_second = ts.slope * (b1->x - b0->x) / (b1->t - b0->t);
    out->verdict = LW_VERDICT_NO_LEAK;

    if (!(mk.p_increasing < p->alpha) || !(ts.lo > 0) || !(ts.slope > 0)) {
        out->reason = "no significant growth of the floor";
        goto done;
    }
    int third = w / 3 >= 6 ? w / 3 : 6;
    lw_theil_sen_result t3;
    if (third <= w && lw_theil_sen(wx + (w - third), wy + (w - third), third, 0.95, &t3) == 0 &&
        !(t3.slope >= p->third_ratio * ts.slope)) {
        out->reason = "growth has slowed or stopped (newest third)";
        goto done;
    }
    if (decelerates(wx, wy, w)) {
        out->reason = "growth is decelerating (warm-up or a cache filling up)";
        goto done;
    }
    double rise = ts.slope * (wx[w - 1] - wx[0]);
    if (drawdown(wy, w) > p->max_drawdown * rise) {
        out->reason = "the floor falls back (a cycle, not a leak)";
        goto done;
    }
    out->verdict = LW_VERDICT_LEAK;
    out->reason = "the floor grows steadily";
    out->onset_x = find_onset(x, y, n);
done:
    free(x);
    return 0;
}
