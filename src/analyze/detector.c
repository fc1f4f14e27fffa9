#include "detector.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lw_verdict_name(lw_verdict v) {
    return v == LW_VERDICT_LEAK ? "leak" : v == LW_VERDICT_NO_LEAK ? "no_leak" : "inconclusive";
}

lw_detect_params lw_detect_defaults(void) {
    lw_detect_params p = {
        .min_points = 24,
        .min_window = 16,
        .alpha = 1e-4,
        .alpha_recent = 0.05,
        .alpha_guard = 1e-6,
        .alpha_enter = 1e-3,
        .alpha_fallback = 0.05,
        .alpha_keep = 1e-2,
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

/* The standard deviation of one bin's floor around any smooth curve, from
 * second differences (y[i-1] - 2 y[i] + y[i+1] has variance 6 sd^2 for
 * independent noise, and a trend, a warm-up or a slow cycle hardly moves
 * it): 1.4826 MAD / sqrt(6), robust to spikes and to the falls of a
 * sawtooth. When more than half of the differences are exactly equal (a
 * floor without noise that moves in steps), the MAD is 0 and the mean
 * absolute difference stands in for it. Never below a few ulps of the
 * floor, so a floor without noise gives finite test statistics. */
static double noise_of(const double *y, int n) {
    double level = 0;
    for (int i = 0; i < n; i++)
        level = fmax(level, fabs(y[i]));
    double eps = 1e-9 * level + 1e-9;
    if (n < 4) return eps;
    int m = n - 2;
    double *d = malloc(sizeof(double) * (size_t)m * 2);
    if (!d) return eps;
    double *a = d + m;
    for (int i = 0; i < m; i++)
        d[i] = (y[i] - y[i + 1]) + (y[i + 2] - y[i + 1]);
    memcpy(a, d, sizeof(double) * (size_t)m);
    double med = lw_median(a, m);
    double mean_abs = 0;
    for (int i = 0; i < m; i++) {
        a[i] = fabs(d[i] - med);
        mean_abs += a[i];
    }
    mean_abs /= m;
    double s = 1.4826 * lw_median(a, m) / sqrt(6.0);
    if (!(s > 0)) s = mean_abs * sqrt(M_PI / 2) / sqrt(6.0);
    free(d);
    return s > eps ? s : eps;
}

/* Least-squares slope of y on x and Sxx = sum (x - mean)^2. */
static double ols_slope(const double *x, const double *y, int n, double *sxx_out) {
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++)
        mx += x[i], my += y[i];
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    *sxx_out = sxx;
    return sxx > 0 ? sxy / sxx : 0;
}

/* One-sided upper tail of the normal distribution. */
static double upper_p(double z) {
    return 0.5 * erfc(z / M_SQRT2);
}

typedef struct {
    const char *name, *why;
    double p;
} guard_result;

/* The guards against growth that stops, as tests of H0 "the window grows
 * linearly, with independent noise of sd sigma per bin", each rejecting at
 * level alpha:
 *   deceleration: the quadratic term of a least-squares parabola is
 *     significantly negative (warm-up, a cache filling up, saturation);
 *   stopped: the least-squares slope of the newest third is significantly
 *     below the window's (growth that ended; under H0 their difference is
 *     independent of the window's slope, with variance sigma^2 (1/S3 - 1/Sw)).
 * Fills *g and returns 1 when one rejects. */
static int growth_stops(const double *x, const double *y, int w, double sigma, double alpha,
                        guard_result *g) {
    if (w < 8) return 0;
    double zg = lw_normal_quantile(1 - alpha);
    /* x^2, centred and scaled to [-1, 1], less its projection on 1 and x. */
    double m = 0, s = 0;
    for (int i = 0; i < w; i++)
        m += x[i];
    m /= w;
    for (int i = 0; i < w; i++)
        s = fmax(s, fabs(x[i] - m));
    if (!(s > 0)) return 0;
    double st = 0, stt = 0, sttt = 0, sqq = 0, sqy = 0, ym = 0;
    for (int i = 0; i < w; i++) {
        double t = (x[i] - m) / s;
        st += t, stt += t * t, sttt += t * t * t;
        ym += y[i];
    }
    ym /= w;
    double tm = st / w, ttm = stt / w;
    double sc = stt - w * tm * tm; /* sum (t - tm)^2 */
    double beta = sc > 0 ? (sttt - w * tm * ttm) / sc : 0;
    for (int i = 0; i < w; i++) {
        double t = (x[i] - m) / s;
        double q = (t * t - ttm) - beta * (t - tm);
        sqq += q * q;
        sqy += q * (y[i] - ym);
    }
    if (sqq > 0) {
        double z = sqy / sqrt(sqq) / sigma;
        if (z < -zg) {
            g->name = LW_GUARD_DECELERATION;
            g->why = "the growth decelerates (a warm-up, or a cache filling up)";
            g->p = upper_p(-z);
            return 1;
        }
    }
    int third = w / 3;
    if (third >= 4) {
        double sw, s3;
        double bw = ols_slope(x, y, w, &sw);
        double b3 = ols_slope(x + (w - third), y + (w - third), third, &s3);
        double v = 1 / s3 - 1 / sw;
        if (bw > 0 && v > 0) {
            double z = (bw - b3) / (sigma * sqrt(v));
            if (z > zg) {
                g->name = LW_GUARD_STOPPED;
                g->why = "the newest third grows much slower than the window: growth has slowed or "
                         "stopped";
                g->p = upper_p(z);
                return 1;
            }
        }
    }
    return 0;
}

/* The cycle guard. A floor that only grows never falls by more than its
 * noise; a cache that fills and is freed (a sawtooth) falls back by its
 * size. Falls are looked for between bins one or two apart, after removing
 * the window's slope; under H0 each such difference has sd sigma sqrt(2),
 * and a fall beyond the level that 2w of them reach with probability alpha
 * is a release. Then the floor's low points decide: the minima of blocks as
 * long as the longest cycle, which stay level for a cycle and rise for a
 * leak, even one under a sawtooth (Mann–Kendall at alpha_low). Returns 1
 * (and fills *g) when the floor falls back without its low points rising. */
static int falls_back(const double *x, const double *y, int w, double slope, double sigma,
                      double alpha, double alpha_low, guard_result *g, double *p_lows) {
    *p_lows = NAN;
    if (w < 8 || !(slope > 0)) return 0;
    double thr = sigma * M_SQRT2 * lw_normal_quantile(1 - alpha / (2.0 * w));
    double biggest = 0;
    int *at = malloc(sizeof(int) * (size_t)w);
    if (!at) return 0;
    int drops = 0;
    for (int i = 0; i + 1 < w; i++) {
        double r0 = y[i] - slope * x[i];
        double f1 = r0 - (y[i + 1] - slope * x[i + 1]);
        double f2 = i + 2 < w ? r0 - (y[i + 2] - slope * x[i + 2]) : 0;
        double f = fmax(f1, f2);
        if (f > biggest) biggest = f;
        /* One release may span two bins: falls within two bins are one. */
        if (f > thr && (!drops || i - at[drops - 1] > 2)) at[drops++] = i;
    }
    if (!drops) {
        free(at);
        return 0;
    }
    g->name = LW_GUARD_CYCLE;
    g->why = "the floor falls back to where it was (a cycle, not a leak)";
    g->p = fmin(1, 2.0 * w * upper_p(biggest / (sigma * M_SQRT2)));
    /* The typical cycle: the median distance between falls (some falls
     * hide in the noise, so not the largest). Blocks one bin longer hold a
     * low point of every cycle; with fewer than 6 blocks the low points
     * cannot show a trend. */
    int block = 0;
    if (drops >= 3) {
        double *gaps = malloc(sizeof(double) * (size_t)(drops - 1));
        if (gaps) {
            for (int i = 1; i < drops; i++)
                gaps[i - 1] = at[i] - at[i - 1];
            block = (int)lw_median(gaps, drops - 1) + 1;
            free(gaps);
        }
    }
    free(at);
    if (!block || w / block < 6) return 1;
    int nb = w / block;
    double *bx = malloc(sizeof(double) * (size_t)nb * 2);
    if (!bx) return 1;
    double *by = bx + nb;
    for (int b = 0; b < nb; b++) {
        int end = w - (nb - 1 - b) * block, start = end - block;
        double lo = INFINITY, mx = 0;
        for (int i = start; i < end; i++) {
            if (y[i] < lo) lo = y[i];
            mx += x[i];
        }
        bx[b] = mx / block;
        by[b] = lo;
    }
    lw_mk_result mk;
    int rise = lw_mann_kendall(by, nb, &mk) == 0 && mk.p_increasing < alpha_low;
    if (rise) *p_lows = mk.p_increasing;
    free(bx);
    return !rise;
}

/* 1 when some bin lies below one or two bins before it by more than
 * independent noise of sd sigma allows at level alpha (the window's least-
 * squares slope removed): the floor fell back. */
static int has_falls(const double *x, const double *y, int w, double sigma, double alpha) {
    if (w < 8) return 0;
    double sxx, b = ols_slope(x, y, w, &sxx);
    double thr = sigma * M_SQRT2 * lw_normal_quantile(1 - alpha / (2.0 * w));
    for (int i = 0; i + 1 < w; i++)
        for (int j = i + 1; j <= i + 2 && j < w; j++)
            if ((y[i] - b * x[i]) - (y[j] - b * x[j]) > thr) return 1;
    return 0;
}

/* 1.4826 MAD of the residuals around the least-squares line. */
static double resid_sd(const double *x, const double *y, int w) {
    double *r = malloc(sizeof(double) * (size_t)w);
    if (!r) return 0;
    double sxx, b = ols_slope(x, y, w, &sxx);
    for (int i = 0; i < w; i++)
        r[i] = (y[i] - y[0]) - b * (x[i] - x[0]);
    double med = lw_median(r, w);
    for (int i = 0; i < w; i++)
        r[i] = fabs((y[i] - y[0]) - b * (x[i] - x[0]) - med);
    double s = 1.4826 * lw_median(r, w);
    free(r);
    return s;
}

/* The windows tried, longest first: all bins, the newest 3/4, the newest half. */
static const int window_parts[3][2] = {{1, 1}, {3, 4}, {1, 2}};

int lw_detect(const lw_bin *bins, int n, const lw_detect_params *p, lw_growth *out) {
    memset(out, 0, sizeof *out);
    out->verdict = LW_VERDICT_INCONCLUSIVE;
    out->p_value = out->p_recent = out->guard_p = NAN;
    out->slope = out->lo = out->hi = out->onset_x = out->bytes_per_second = NAN;
    out->noise_bin = out->noise_step = out->min_rate = out->more_steps = NAN;
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
    /* The newest bin may still be filling: the noise comes from full ones. */
    int full = n;
    while (full > 1 && bins[full - 1].n < bins[0].n)
        full--;
    uint32_t width = bins[0].n ? bins[0].n : 1;

    /* The windows: each that no guard rejects is tested, and the strongest
     * trend counts, its p-value multiplied by the number of windows tested
     * (Bonferroni). A steady leak is strongest over all its data; a leak
     * that began late, after a flat stretch, over the newer windows. Once a
     * window is accepted, smaller ones that a guard rejects are skipped. */
    int w = 0, tested = 0, chosen = -1, wk = 0, all_ok = 0;
    double sigma = 0, sigma_guard = 0, ratio = 1, best_p = INFINITY;
    guard_result overruled = {0};
    lw_theil_sen_result ts = {0};
    lw_mk_result mk = {0};
    for (int k = 0; k < 3; k++) {
        int wn = (int)(((long long)n * window_parts[k][0] + window_parts[k][1] - 1) /
                       window_parts[k][1]);
        if (wn < p->min_window) wn = p->min_window;
        if (wn > n) wn = n;
        if (k > 0 && wn == wk) continue;
        wk = wn;
        const double *kx = x + (n - wk), *ky = y + (n - wk);
        /* The guards weigh every bin alike: they leave out a bin still
         * filling, whose noise is larger. */
        int wf = full - (n - wk);
        if (wf < 4) wf = wk;
        double sk = noise_of(ky, wf);
        /* A floor that falls back (a sawtooth) moves slowly between its
         * falls: its spread around the trend, not its step-to-step noise, is
         * what a curvature or a slope compares against. */
        double sg = sk;
        if (has_falls(kx, ky, wf, sk, p->alpha_guard)) sg = fmax(sk, resid_sd(kx, ky, wf));
        guard_result g = {0};
        if (growth_stops(kx, ky, wf, sg, p->alpha_guard, &g)) {
            if (chosen < 0) {
                overruled = g;
                w = wk, sigma = sk, sigma_guard = sg;
            }
            continue;
        }
        if (k == 0) all_ok = 1;
        lw_theil_sen_result tk;
        lw_mk_result mkk;
        double rk = 1;
        if (lw_theil_sen(kx, ky, wk, 0.95, &tk) != 0 ||
            lw_mann_kendall_corrected(kx, ky, wk, &mkk, &rk) != 0)
            continue;
        tested++;
        if (chosen < 0 || mkk.p_increasing < best_p) {
            chosen = k, best_p = mkk.p_increasing;
            w = wk, sigma = sk, sigma_guard = sg, ts = tk, mk = mkk, ratio = rk;
        }
    }
    if (chosen >= 0) {
        overruled.name = NULL;
    } else if (w > 0) {
        /* Every window rejected: the numbers of the smallest. */
        if (lw_theil_sen(x + (n - w), y + (n - w), w, 0.95, &ts) != 0 ||
            lw_mann_kendall_corrected(x + (n - w), y + (n - w), w, &mk, &ratio) != 0)
            w = 0;
        tested = 1;
    }
    if (w == 0) {
        out->reason = "the statistics could not be computed";
        free(x);
        return 0;
    }
    if (tested > 1) mk.p_increasing = fmin(1, mk.p_increasing * tested);
    const double *wx = x + (n - w), *wy = y + (n - w);
    out->window = w;
    out->noise_bin = sigma;
    out->noise_step = sigma * sqrt((double)width);
    out->slope = ts.slope;
    out->lo = ts.lo;
    out->hi = ts.hi;
    out->p_value = mk.p_increasing;
    const lw_bin *b0 = &bins[n - w], *b1 = &bins[n - 1];
    if (b1->t > b0->t && b1->x > b0->x)
        out->bytes_per_second = ts.slope * (b1->x - b0->x) / (b1->t - b0->t);

    /* The newest half of the window. */
    int half = w / 2 >= 8 ? w / 2 : (w < 8 ? w : 8);
    lw_mk_result mk2;
    double r2;
    if (lw_mann_kendall_corrected(wx + (w - half), wy + (w - half), half, &mk2, &r2) == 0)
        out->p_recent = mk2.p_increasing;

    /* What this run can see: the least-squares slope's standard error over
     * the window and its newest half, with the noise inflated as the
     * Mann–Kendall correction found, against the two tests' levels. */
    double sw, sh;
    (void)ols_slope(wx, wy, w, &sw);
    (void)ols_slope(wx + (w - half), wy + (w - half), half, &sh);
    double s_eff = sigma * sqrt(ratio > 1 ? ratio : 1);
    double zt = lw_normal_quantile(1 - p->alpha / tested),
           zr = lw_normal_quantile(1 - p->alpha_recent);
    if (sw > 0 && sh > 0) out->min_rate = fmax(zt * s_eff / sqrt(sw), zr * s_eff / sqrt(sh));
    /* Steps still needed at the current rate: Sxx of a span L with one point
     * per x unit is L^3/12, the window is a fixed share of the series. */
    double span = wx[w - 1] - wx[0], total = x[n - 1] - x[0];
    double sstep = out->noise_step * sqrt(ratio > 1 ? ratio : 1);
    if (ts.slope > 0 && span > 0 && total > 0) {
        double need_t = cbrt(12 * pow(zt * sstep / ts.slope, 2));
        double need_r = 2 * cbrt(12 * pow(zr * sstep / ts.slope, 2));
        double need = fmax(need_t, need_r);
        out->more_steps = fmax(0, (need - span) * total / span);
    }

    int significant = mk.p_increasing < p->alpha && ts.lo > 0 && ts.slope > 0;
    int wf = full - (n - w);
    if (wf < 4) wf = w;
    guard_result cyc = {0};
    double p_lows = NAN;
    int cycle = !overruled.name && falls_back(wx, wy, wf, ts.slope, sigma, p->alpha_guard,
                                              p->alpha_keep, &cyc, &p_lows);
    if (cycle) overruled = cyc;
    /* Hysteresis: a new leak verdict needs more than an announced one needs
     * to stand (the evidence of a steady leak only grows, so it never falls
     * back across the gap). On the whole series, an announced leak stands
     * while the trend holds at alpha_keep and no guard overrules it; a new
     * one also needs no guard to object even at alpha_enter. Once a guard
     * has rejected older data (the series decelerated), what is left is the
     * tail of a warm-up or a leak that began later: there a new verdict
     * needs no guard to object at alpha_fallback (a tail decelerates, a
     * leak does not), and an announced one needs the full trend test and no
     * guard at alpha_enter. */
    double enter_level = all_ok ? p->alpha_enter : p->alpha_fallback;
    double keep_level = all_ok ? p->alpha_guard : p->alpha_enter;
    guard_result early = {0}, weak = {0};
    int slowing = !overruled.name && significant &&
                  growth_stops(wx, wy, wf, sigma_guard, enter_level, &early);
    int slowed = !overruled.name && growth_stops(wx, wy, wf, sigma_guard, keep_level, &weak);
    int lows_unclear = !overruled.name && !isnan(p_lows) && !(p_lows < p->alpha);
    out->supports_leak = !overruled.name && !slowed && ts.slope > 0 &&
                         (all_ok ? mk.p_increasing < p->alpha_keep : significant);
    if (overruled.name && significant) {
        out->verdict = LW_VERDICT_NO_LEAK;
        out->overruled_by = overruled.name;
        out->guard_why = overruled.why;
        out->guard_p = overruled.p;
        out->reason = overruled.why;
    } else if (!significant) {
        out->verdict = LW_VERDICT_NO_LEAK;
        out->reason = "no significant growth of the floor";
    } else if (slowing) {
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->guard_p = early.p;
        out->reason = !strcmp(early.name, LW_GUARD_DECELERATION)
                          ? "the floor grows, but may be decelerating: more steps needed"
                          : "the floor grows, but its newest third may have slowed: more steps "
                            "needed";
    } else if (lows_unclear) {
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->reason = "the floor grows and falls back; its low points do not yet rise clearly: "
                      "more steps needed";
    } else if (!(out->p_recent < p->alpha_recent)) {
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->reason =
            "the floor grows, but its newest half does not yet show it: more steps needed";
    } else {
        out->verdict = LW_VERDICT_LEAK;
        out->reason = "the floor grows steadily";
        out->more_steps = 0;
    }
    if (out->verdict == LW_VERDICT_LEAK || out->supports_leak)
        out->onset_x = find_onset(x, y, n, w, ts.slope, ts.intercept);
    free(x);
    return 0;
}

void lw_decision_init(lw_decision *d) {
    memset(d, 0, sizeof *d);
    d->announced = LW_VERDICT_INCONCLUSIVE;
    d->first_leak_x = NAN;
    snprintf(d->reason, sizeof d->reason, "not evaluated yet");
}

lw_verdict lw_decision_update(lw_decision *d, const lw_growth *g, uint64_t points, double x,
                              int confirm) {
    if (d->announced == LW_VERDICT_LEAK) {
        if (g->verdict == LW_VERDICT_LEAK || g->supports_leak) {
            snprintf(d->reason, sizeof d->reason, "the floor grows steadily");
            return d->announced;
        }
        d->withdrawn++;
        d->first_leak_x = NAN;
        d->consecutive = 0;
        d->announced = g->verdict == LW_VERDICT_LEAK ? LW_VERDICT_INCONCLUSIVE : g->verdict;
        snprintf(d->reason, sizeof d->reason, "leak verdict withdrawn: %s", g->reason);
        return d->announced;
    }
    d->consecutive = g->verdict == LW_VERDICT_LEAK ? d->consecutive + 1 : 0;
    if (d->consecutive == 1) d->raw_leak_since = points;
    /* After a withdrawal, a new verdict must also hold over a stretch of
     * data half as long again as when it was first seen: growth that comes
     * and goes (the tail of a warm-up) is not called back and forth. */
    int stretch = !d->withdrawn || 2 * points >= 3 * d->raw_leak_since;
    if (g->verdict == LW_VERDICT_LEAK && d->consecutive >= confirm && stretch) {
        d->announced = LW_VERDICT_LEAK;
        d->first_leak_x = x;
        snprintf(d->reason, sizeof d->reason, "the floor grows steadily");
    } else if (g->verdict == LW_VERDICT_LEAK) {
        d->announced = LW_VERDICT_INCONCLUSIVE;
        snprintf(d->reason, sizeof d->reason,
                 "the floor grows; confirming (%d of %d evaluations in a row)", d->consecutive,
                 confirm);
    } else {
        d->announced = g->verdict;
        snprintf(d->reason, sizeof d->reason, "%s", g->reason);
    }
    return d->announced;
}
