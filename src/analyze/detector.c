/* SPDX-License-Identifier: Apache-2.0 */
#include "detector.h"

#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        .alpha_keep_recent = 0.2,
    };
    return p;
}

/* Where growth began: walking back from the window over older bins, the
 * earliest from which the bins still lie on the window's line (within the
 * noise of the window's residuals; one stray bin does not end the walk, two
 * in a row do). A leak that starts late after a warm-up gets its own start,
 * not the warm-up's. Returns that bin's index. */
static int find_onset(const double *x, const double *y, int n, int w, double slope,
                      double intercept, double slope_err) {
    double *r = malloc(sizeof(double) * (size_t)w);
    if (!r) return n - w;
    for (int i = 0; i < w; i++)
        r[i] = fabs(y[n - w + i] - (intercept + slope * x[n - w + i]));
    double mad = lw_median(r, w);
    free(r);
    /* At least one bin's worth of growth: bins average over their steps. */
    double dx = (x[n - 1] - x[n - w]) / (w > 1 ? w - 1 : 1);
    double tol = 4 * 1.4826 * mad;
    if (tol < slope * dx) tol = slope * dx;
    int onset = n - w, misses = 0;
    for (int i = n - w; i >= 0; i--) {
        /* The line is known to its slope's interval: further back from the
         * window, it is known less well (a pace that varied between time
         * intervals bends the older part of a leak's line). */
        double far = x[n - w] - x[i];
        if (fabs(y[i] - (intercept + slope * x[i])) > tol + slope_err * far) {
            if (++misses >= 2) break;
            continue;
        }
        misses = 0;
        onset = i;
    }
    return onset;
}

/* The steps a bin covers: its points are consecutive steps (or intervals)
 * around their mean x. */
static void bin_range(const lw_bin *b, double *lo, double *hi) {
    double half = b->n > 1 ? (double)(b->n - 1) / 2 : 0;
    *lo = b->x - half;
    *hi = b->x + half;
}

/* The standard deviation of one bin's floor around any smooth curve, from
 * second differences (y[i-1] - 2 y[i] + y[i+1] has variance 6 sd^2 for
 * independent noise, and a trend, a warm-up or a slow cycle hardly moves
 * it): 1.4826 MAD / sqrt(6), robust to spikes and to the falls of a
 * sawtooth. When more than half of the differences are exactly equal (a
 * floor without noise that moves in steps), the MAD is 0 and the mean
 * absolute difference stands in for it. Never below LW_NOISE_FLOOR (nor a
 * few ulps of the floor), so a floor without noise gives finite test
 * statistics and its granules are not taken for falls. */
/* Allocators hand out memory in granules (512 B at the least): a floor
 * without noise still steps by that much around any smooth line. */
#define LW_NOISE_FLOOR 256.0
static double noise_of(const double *y, int n) {
    double level = 0;
    for (int i = 0; i < n; i++)
        level = fmax(level, fabs(y[i]));
    double eps = fmax(1e-9 * level, LW_NOISE_FLOOR);
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

/* A window whose floor does not move (the pinned memory, the tensors or a
 * caching allocator's segments of a job in a steady state): every floor the
 * same bits c, a whole number of bytes below 2^40, on finite steps that rise
 * (below 2^52), 3 to LW_THEIL_SEN_MAX_N of them. Its statistics are known
 * without computing them, exactly as computing them gives (each use below
 * says why): the sums of up to 4096 copies of c are whole numbers below
 * 2^52, so every mean of them is c itself and every deviation from it +0.
 * -0 is left out: c - c and +0 - (-0) would give the deviations other
 * signs. */
#define FLAT_MAX_FLOOR 0x1p40
#define FLAT_MAX_X 0x1p52
static int flat_window(const double *x, const double *y, int w) {
    if (w < 3 || w > LW_THEIL_SEN_MAX_N) return 0;
    double c = y[0];
    if (!(fabs(c) < FLAT_MAX_FLOOR) || c != floor(c) || (c == 0 && signbit(c))) return 0;
    for (int i = 0; i < w; i++) {
        if (memcmp(&y[i], &c, sizeof c) != 0 || !(fabs(x[i]) < FLAT_MAX_X)) return 0;
        if (i > 0 && !(x[i] > x[i - 1])) return 0;
    }
    return 1;
}

/* noise_of on a flat window: the second differences are all +0, so both
 * medians and the mean absolute deviation are 0, and noise_of returns its
 * floor, computed here by the same expressions. */
static double flat_noise(double c) {
    double level = fmax(0, fabs(c));
    return fmax(1e-9 * level, LW_NOISE_FLOOR);
}

/* lw_theil_sen(x, y, w, 0.95) and lw_mann_kendall_corrected_at on a flat
 * window, field by field as they compute them:
 *   Theil–Sen: x rises, so it has no ties, and y is one group of w ties,
 *     whose t(t-1)(2t+5) is the n(n-1)(2n+5) of Kendall's variance: var_s
 *     = (X - 0 - X)/18 + 0 + 0 = +0, Sen's C = z * sqrt(+0) = 0, so the
 *     interval's rank floor(N/2) >= 1 (N = w(w-1)/2 >= 3); every pair
 *     slope is (+0)/(x[j] - x[i] > 0) = +0 (stats.c's flat_rising), so the
 *     slope, lo and hi are +0; the intercept is the median of c - (+-0) = c
 *     (c/2 + c/2 = c for a whole c);
 *   Mann–Kendall: no pair differs, S = +0, its variance the same +0, so
 *     z = 0, both p-values 1 and tau = 0 / (n(n-1)/2) = +0; the residuals
 *     (c - c) - 0 * (x[i] - x[0]) are all +0, so the series has no variance
 *     to correlate: the ratio is 1, and var_s * 1 = +0. */
static void flat_stats(double c, int w, lw_theil_sen_result *ts, lw_mk_result *mk, double *ratio) {
    ts->slope = 0;
    ts->intercept = c;
    ts->lo = ts->hi = 0;
    ts->n_pairs = (int)((size_t)w * (size_t)(w - 1) / 2);
    ts->var_s = 0;
    mk->s = 0;
    mk->var_s = 0;
    mk->z = 0;
    mk->p_two_sided = 1;
    mk->p_increasing = 1;
    mk->n = w;
    mk->tau = 0;
    *ratio = 1;
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
 * at least LW_SLOWDOWN times as fast at its end as at its start, with
 * independent noise of sd sigma per bin", each rejecting at level alpha (a
 * steady leak trips each with probability alpha at most; a leak whose rate
 * wanders by less than half, as a leak per step does in time intervals when
 * the step rate changes, no more often):
 *   deceleration: a least-squares parabola's slope at the window's end is
 *     significantly below LW_SLOWDOWN times its slope at the start (a
 *     warm-up, a cache filling up, saturation);
 *   stopped: the least-squares slope of the newest third is significantly
 *     below LW_SLOWDOWN times the window's (growth that ended).
 * Fills *g and returns 1 when one rejects.
 * On a flat window (flat_window) it returns 0, and choose_window and
 * run_guards skip it there: ym is c, so each r[a] adds products with +0
 * to +0 and stays +0, th and l are then +0 (NaN at worst, should C / det
 * not be finite), z is 0 (or NaN), never below -zg < 0; and the newest
 * third's test needs bw > 0, where bw = sxy / Sxx has sxy = +0. */
#define LW_SLOWDOWN 0.5
static int growth_stops(const double *x, const double *y, int w, double sigma, double alpha,
                        double rho, guard_result *g) {
    if (w < 8) return 0;
    double zg = lw_normal_quantile(1 - alpha);
    /* The parabola y = a + b t + c t^2 over t = (x - m)/s in [-1, 1]; its
     * slope is b - 2c at the window's start and b + 2c at its end. Under H0
     * (end >= rho * start) L = (1 - rho) b + 2 (1 + rho) c >= 0. */
    double m = 0, s = 0, ym = 0;
    for (int i = 0; i < w; i++)
        m += x[i], ym += y[i];
    m /= w;
    ym /= w;
    for (int i = 0; i < w; i++)
        s = fmax(s, fabs(x[i] - m));
    if (!(s > 0)) return 0;
    double M[3][3] = {{0}}, r[3] = {0};
    for (int i = 0; i < w; i++) {
        double t = (x[i] - m) / s, v[3] = {1, t, t * t};
        for (int a = 0; a < 3; a++) {
            r[a] += v[a] * (y[i] - ym);
            for (int b = 0; b < 3; b++)
                M[a][b] += v[a] * v[b];
        }
    }
    /* The inverse of the symmetric 3x3 M, by cofactors. */
    double C[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            int a1 = (a + 1) % 3, a2 = (a + 2) % 3, b1 = (b + 1) % 3, b2 = (b + 2) % 3;
            C[b][a] = M[a1][b1] * M[a2][b2] - M[a1][b2] * M[a2][b1];
        }
    double det = M[0][0] * C[0][0] + M[0][1] * C[1][0] + M[0][2] * C[2][0];
    if (det > 0) {
        double th[3] = {0}, av[3] = {0, 1 - rho, 2 * (1 + rho)}, var = 0, l = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                th[a] += C[a][b] / det * r[b];
                var += av[a] * C[a][b] / det * av[b];
            }
        for (int a = 0; a < 3; a++)
            l += av[a] * th[a];
        double z = var > 0 ? l / (sigma * sqrt(var)) : 0;
        if (z < -zg && th[1] - 2 * th[2] > 0) {
            g->name = LW_GUARD_DECELERATION;
            g->why = "the growth decelerates (a warm-up, or a cache filling up)";
            g->p = upper_p(-z);
            return 1;
        }
    }
    /* The newest third against the window: H0 b3 >= rho bw. As bw is the
     * efficient estimate, Cov(b3, bw) = Var(bw), so
     * Var(b3 - rho bw) = sigma^2 (1/S3 - (2 rho - rho^2)/Sw). */
    int third = w / 3;
    if (third >= 4) {
        double sw, s3;
        double bw = ols_slope(x, y, w, &sw);
        double b3 = ols_slope(x + (w - third), y + (w - third), third, &s3);
        double v = 1 / s3 - (2 * rho - rho * rho) / sw;
        if (bw > 0 && v > 0) {
            double z = (rho * bw - b3) / (sigma * sqrt(v));
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

/* How far the floor falls after bin i: the lowest of the FALL_BEFORE bins
 * up to i above the higher of bins i+1 and i+2. A release lowers the floor
 * after a cycle spent above it, so the bins after it lie below all the bins
 * before it; a short run of high bins (time intervals that missed the
 * step's low point while the job was descheduled) or a single low one is
 * no fall. Under H0 it is at most y[i] - y[i+1], a difference of sd
 * sigma sqrt(2) and mean at most 0. */
#define FALL_BEFORE 4
static double fall_at(const double *y, int i) {
    double before = y[i];
    for (int k = i - FALL_BEFORE + 1; k < i; k++)
        before = fmin(before, y[k]);
    return before - fmax(y[i + 1], y[i + 2]);
}

/* The cycle guard. A floor that only grows never falls by more than its
 * noise; a cache that fills and is freed (a sawtooth) falls back by its
 * size. A fall (fall_at) beyond the level that w of them reach with
 * probability alpha under H0 is a release. Then the floor's low points decide: the minima of blocks
 * as long as the longest cycle, which stay level for a cycle and rise for a leak, even one under a
 * sawtooth (Mann–Kendall at alpha_low). Returns 1 (and fills *g) when the floor falls back without
 * its low points rising, 2 when it falls back but the low points cannot be tested yet, else 0. */
static int falls_back(const double *x, const double *y, int w, double slope, double alpha,
                      double alpha_low, guard_result *g, double *p_lows) {
    *p_lows = NAN;
    if (w < 8 || !(slope > 0)) return 0;
    /* The noise only past that return: a floor that does not rise (most
     * evaluations of a job that does not leak) skips its two medians. */
    double sigma = noise_of(y, w);
    double thr = sigma * M_SQRT2 * lw_normal_quantile(1 - alpha / (2.0 * w));
    double biggest = 0;
    int *at = malloc(sizeof(int) * (size_t)w);
    if (!at) return 0;
    int drops = 0;
    for (int i = FALL_BEFORE - 1; i + 2 < w; i++) {
        double f = fall_at(y, i);
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
    /* Without enough cycles to test the low points: a fall that gives back
     * at least all the growth the trend claims is a cycle; a smaller one
     * leaves the question open (2). */
    if (!block || w / block < 6) return biggest >= slope * (x[w - 1] - x[0]) ? 1 : 2;
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

/* 1.4826 MAD of the residuals around the least-squares parabola: the
 * spread the guards' own model leaves unexplained. 0 on a flat window
 * (flat_window), where choose_window does not call it: the fit's mean is c,
 * its centred floors +0, which the reflections keep +0 (each subtracts
 * (2 * (+0) / vv) times a column), so its coefficients are +-0 and a is c,
 * every residual and their median 0, and so the MAD. */
static double resid_sd(const double *x, const double *y, int w) {
    lw_quad_fit q;
    if (w < 8 || lw_quadratic_fit(x, y, w, &q) != 0) return 0;
    double *r = malloc(sizeof(double) * (size_t)w);
    if (!r) return 0;
    /* About the first point: floors near 4e9 leave a double few digits. */
    double x0 = x[0], y0 = q.a + q.b * x0 + q.c * x0 * x0;
    for (int i = 0; i < w; i++) {
        double dx = x[i] - x0;
        r[i] = (y[i] - y0) - (q.b + 2 * q.c * x0) * dx - q.c * dx * dx;
    }
    double med = lw_median(r, w);
    for (int i = 0; i < w; i++) {
        double dx = x[i] - x0;
        r[i] = fabs((y[i] - y0) - (q.b + 2 * q.c * x0) * dx - q.c * dx * dx - med);
    }
    double s = 1.4826 * lw_median(r, w);
    free(r);
    return s;
}

/* The windows tried, longest first: all bins, the newest 3/4, half and
 * quarter. */
#define NWINDOWS 4
static const int window_parts[NWINDOWS][2] = {{1, 1}, {3, 4}, {1, 2}, {1, 4}};

/* The series as the steps below read it. */
typedef struct {
    const lw_bin *bins;
    const lw_detect_params *p;
    int n;
    int full;       /* bins up to the newest one that is full */
    uint32_t width; /* points per full bin */
    double *x, *y;  /* the bins' steps and floors (one allocation, x first) */
} series_view;

/* The window the trend is tested on (choose_window): the newest w bins. */
typedef struct {
    int w;              /* 0: no statistics could be computed */
    int tested;         /* windows the trend test ran on (Bonferroni) */
    int all_ok;         /* the whole series passed the guards */
    int flat;           /* the window's floor does not move (flat_window) */
    double sigma;       /* noise of one bin (noise_of) */
    double sigma_guard; /* what the guards compare against */
    double ratio;       /* Mann–Kendall's variance inflation for serial correlation */
    lw_theil_sen_result ts;
    lw_mk_result mk;
    guard_result overruled; /* when every window was rejected: the guard that did */
} window_choice;

/* What the guards found on the chosen window (run_guards). */
typedef struct {
    guard_result overruled; /* a guard that overrules a significant trend; name NULL: none */
    guard_result early;     /* the guard that holds a new leak verdict back (slowing) */
    int slowing;            /* a new leak verdict is held back */
    int slowed;             /* an announced leak no longer stands */
    int lows_unclear;       /* the floor falls back and its low points do not yet rise */
} guard_findings;

/* Every field unknown, the verdict inconclusive. */
static void detect_reset(lw_growth *out) {
    memset(out, 0, sizeof *out);
    out->verdict = LW_VERDICT_INCONCLUSIVE;
    out->p_value = out->p_recent = out->guard_p = NAN;
    out->slope = out->lo = out->hi = out->onset_x = out->bytes_per_second = NAN;
    out->onset_lo = out->onset_hi = NAN;
    out->noise_bin = out->noise_step = out->min_rate = out->more_steps = NAN;
}

/* The bins as arrays; returns 0 when out of memory. */
static int view_of(const lw_bin *bins, int n, const lw_detect_params *p, series_view *v) {
    v->bins = bins;
    v->p = p;
    v->n = n;
    v->x = malloc(sizeof(double) * (size_t)n * 2);
    if (!v->x) return 0;
    v->y = v->x + n;
    for (int i = 0; i < n; i++)
        v->x[i] = bins[i].x, v->y[i] = bins[i].floor;
    /* The newest bin may still be filling: the noise comes from full ones. */
    v->full = n;
    while (v->full > 1 && bins[v->full - 1].n < bins[0].n)
        v->full--;
    v->width = bins[0].n ? bins[0].n : 1;
    return 1;
}

/* Window k's length in bins (window_parts, at least min_window). */
static int window_bins(const series_view *v, int k) {
    int n = v->n;
    int wn =
        (int)(((long long)n * window_parts[k][0] + window_parts[k][1] - 1) / window_parts[k][1]);
    if (wn < v->p->min_window) wn = v->p->min_window;
    if (wn > n) wn = n;
    return wn;
}

/* The windows: each that no guard rejects is tested, and the strongest
 * trend counts, its p-value multiplied by the number of windows tested
 * (Bonferroni). A steady leak is strongest over all its data; a leak that
 * began late, after a flat stretch, over the newer windows. Once a window
 * is accepted, smaller ones that a guard rejects are skipped. Returns 0
 * when no window's statistics could be computed. */
static int choose_window(const series_view *v, window_choice *c) {
    const lw_detect_params *p = v->p;
    const double *x = v->x, *y = v->y;
    int n = v->n, chosen = -1, wk = 0;
    double best_p = INFINITY;
    memset(c, 0, sizeof *c);
    c->ratio = 1;
    for (int k = 0; k < NWINDOWS; k++) {
        int wn = window_bins(v, k);
        if (k > 0 && wn == wk) continue;
        wk = wn;
        const double *kx = x + (n - wk), *ky = y + (n - wk);
        /* The guards weigh every bin alike: they leave out a bin still
         * filling, whose noise is larger. */
        int wf = v->full - (n - wk);
        if (wf < 4) wf = wk;
        /* wf <= wk: a flat window's first wf bins are flat too. */
        int flat = !p->no_shortcut && flat_window(kx, ky, wk);
        double sk = flat ? flat_noise(ky[0]) : noise_of(ky, wf);
        /* The guards compare against the larger of that noise and the
         * floor's spread around a parabola: a floor that moves in steps (a
         * leak every k steps) or cycles (a sawtooth) strays from any smooth
         * curve by more than its step-to-step noise, and a bend or a flat
         * stretch of that size is no sign of growth stopping. (A warm-up's
         * bend is the parabola's own: it adds nothing to that spread.) */
        /* Flat: the parabola fits the floor exactly (resid_sd 0), and
         * growth_stops finds no growth to stop (see growth_stops). */
        double sg = flat ? sk : fmax(sk, resid_sd(kx, ky, wf));
        guard_result g = {0};
        if (!flat && growth_stops(kx, ky, wf, sg, p->alpha_guard, LW_SLOWDOWN, &g)) {
            if (chosen < 0) {
                c->overruled = g;
                c->w = wk, c->sigma = sk, c->sigma_guard = sg;
            }
            continue;
        }
        if (k == 0) c->all_ok = 1;
        lw_theil_sen_result tk;
        lw_mk_result mkk;
        double rk = 1;
        if (flat)
            flat_stats(ky[0], wk, &tk, &mkk, &rk);
        else if (lw_theil_sen(kx, ky, wk, 0.95, &tk) != 0 ||
                 lw_mann_kendall_corrected_at(kx, ky, wk, &tk, &mkk, &rk) != 0)
            continue;
        c->tested++;
        if (chosen < 0 || mkk.p_increasing < best_p) {
            chosen = k, best_p = mkk.p_increasing;
            c->w = wk, c->sigma = sk, c->sigma_guard = sg, c->ts = tk, c->mk = mkk, c->ratio = rk;
            c->flat = flat;
        }
    }
    if (chosen >= 0) {
        c->overruled.name = NULL;
    } else if (c->w > 0) {
        /* Every window rejected: the numbers of the smallest. */
        int w = c->w;
        if (lw_theil_sen(x + (n - w), y + (n - w), w, 0.95, &c->ts) != 0 ||
            lw_mann_kendall_corrected_at(x + (n - w), y + (n - w), w, &c->ts, &c->mk, &c->ratio) !=
                0)
            c->w = 0;
        c->tested = 1;
    }
    if (c->w == 0) return 0;
    if (c->tested > 1) c->mk.p_increasing = fmin(1, c->mk.p_increasing * c->tested);
    return 1;
}

/* The window's numbers: its length, noise, Theil–Sen rate and interval,
 * the trend's p-value and the rate per second. */
static void describe_window(const series_view *v, const window_choice *c, lw_growth *out) {
    const lw_bin *bins = v->bins;
    int n = v->n, w = c->w;
    out->window = w;
    out->noise_bin = c->sigma;
    out->noise_step = c->sigma * sqrt((double)v->width);
    out->slope = c->ts.slope;
    out->lo = c->ts.lo;
    out->hi = c->ts.hi;
    out->p_value = c->mk.p_increasing;
    /* Per second at the pace of the newest quarter of the window (two bins
     * at least), not of the whole window, whose oldest bins hold the
     * start-up's slow first steps. The series with step marks replace it
     * with the job's own pace (tracked.c, lw_pace_rate over the marks' own
     * times), which the bins' width and a few descheduled milliseconds do
     * not move; this figure stands where no such pace is kept. */
    int recent = w / 4 >= 2 ? w / 4 : (w >= 2 ? 2 : 1);
    const lw_bin *b0 = &bins[n - recent], *b1 = &bins[n - 1];
    if (recent < 2) b0 = &bins[n - w];
    if (b1->t > b0->t && b1->x > b0->x)
        out->bytes_per_second = c->ts.slope * (b1->x - b0->x) / (b1->t - b0->t);
}

/* The newest half of a window of w bins (8 at least). */
static int newest_half(int w) {
    return w / 2 >= 8 ? w / 2 : (w < 8 ? w : 8);
}

/* Mann–Kendall over the newest half of the window (p_recent). */
static void test_newest_half(const series_view *v, const window_choice *c, lw_growth *out) {
    int w = c->w, half = newest_half(w);
    const double *wx = v->x + (v->n - w), *wy = v->y + (v->n - w);
    lw_mk_result mk2;
    double r2;
    /* A flat newest half: no pair differs, p = 1 (flat_stats). */
    if (!v->p->no_shortcut && flat_window(wx + (w - half), wy + (w - half), half))
        out->p_recent = 1;
    else if (lw_mann_kendall_corrected(wx + (w - half), wy + (w - half), half, &mk2, &r2) == 0)
        out->p_recent = mk2.p_increasing;
}

/* What this run can see: the least-squares slope's standard error over the
 * window and its newest half, with the noise inflated as the Mann–Kendall
 * correction found, against the two tests' levels (min_rate); and the steps
 * still needed at the current rate (more_steps). */
static void sensitivity(const series_view *v, const window_choice *c, lw_growth *out) {
    const lw_detect_params *p = v->p;
    const double *x = v->x;
    int n = v->n, w = c->w, half = newest_half(w);
    const double *wx = x + (n - w), *wy = v->y + (n - w);
    double ratio = c->ratio;
    double sw, sh;
    (void)ols_slope(wx, wy, w, &sw);
    (void)ols_slope(wx + (w - half), wy + (w - half), half, &sh);
    double s_eff = c->sigma * sqrt(ratio > 1 ? ratio : 1);
    double zt = lw_normal_quantile(1 - p->alpha / c->tested),
           zr = lw_normal_quantile(1 - p->alpha_recent);
    if (sw > 0 && sh > 0) out->min_rate = fmax(zt * s_eff / sqrt(sw), zr * s_eff / sqrt(sh));
    /* Steps still needed at the current rate: Sxx of a span L with one point
     * per x unit is L^3/12, the window is a fixed share of the series. */
    double span = wx[w - 1] - wx[0], total = x[n - 1] - x[0];
    /* Nor less than what is_significant asks: growth of one allocation
     * granule over the window (a flat floor's slope error is tiny, but a
     * leak of less than a granule over the window is never called). */
    if (isfinite(out->min_rate) && span > 0)
        out->min_rate = fmax(out->min_rate, LW_NOISE_FLOOR / span);
    double sstep = out->noise_step * sqrt(ratio > 1 ? ratio : 1);
    double slope = c->ts.slope;
    if (slope > 0 && span > 0 && total > 0) {
        double need_t = cbrt(12 * pow(zt * sstep / slope, 2));
        double need_r = 2 * cbrt(12 * pow(zr * sstep / slope, 2));
        double need = fmax(need_t, need_r);
        out->more_steps = fmax(0, (need - span) * total / span);
    }
}

/* A significant trend: Mann–Kendall at alpha, Theil–Sen's interval above 0,
 * and growth that adds up to at least an allocation granule over the
 * window (less is no growth of memory, however regular). */
static int is_significant(const series_view *v, const window_choice *c) {
    const double *wx = v->x + (v->n - c->w);
    const lw_theil_sen_result *ts = &c->ts;
    return c->mk.p_increasing < v->p->alpha && ts->lo > 0 && ts->slope > 0 &&
           ts->slope * (wx[c->w - 1] - wx[0]) >= LW_NOISE_FLOOR;
}

/* Evidence of growth short of significance: a positive Theil–Sen slope
 * whose 95% interval does not reach below zero, with a trend at the level an
 * announced leak is kept at (alpha_keep), adding up to at least a granule
 * over the window. Such a run cannot say "no leak" of the size it
 * measured. (A clean floor under heavy noise shows this at about 2% of
 * evaluations: an inconclusive answer, never a wrong one.) */
static int growth_suggested(const series_view *v, const window_choice *c) {
    const double *wx = v->x + (v->n - c->w);
    const lw_theil_sen_result *ts = &c->ts;
    return ts->slope > 0 && ts->lo >= 0 && c->mk.p_increasing < v->p->alpha_keep &&
           ts->slope * (wx[c->w - 1] - wx[0]) >= LW_NOISE_FLOOR;
}

/* What a run that did not call a leak can claim to rule out (min_rate),
 * consistent with what it measured: never below the rate it saw without
 * calling it, scaled to the trend test's level (the test statistic grows
 * with the rate at a given noise), nor below the upper end of that rate's
 * 95% interval, nor below a granule over the window. */
static void rule_out(const series_view *v, const window_choice *c, lw_growth *out) {
    if (out->verdict == LW_VERDICT_LEAK || out->window < 2) return;
    const double *wx = v->x + (v->n - c->w);
    double span = wx[c->w - 1] - wx[0];
    double m = isfinite(out->min_rate) ? out->min_rate : 0;
    if (span > 0) m = fmax(m, LW_NOISE_FLOOR / span);
    if (isfinite(c->ts.hi)) m = fmax(m, c->ts.hi);
    /* A floor that moves in granules (a caching allocator's segments) shows
     * a leak only as its next rise: the flat stretch since the last rise
     * beyond the noise rules out only leaks that would have filled a granule
     * in it. */
    double rise = 0, since = 0;
    for (int i = 1; i < v->n; i++)
        if (v->y[i] - v->y[i - 1] > 8 * c->sigma && v->y[i] - v->y[i - 1] >= rise)
            rise = v->y[i] - v->y[i - 1], since = v->x[v->n - 1] - v->x[i - 1];
    if (rise > 0 && since > 0) m = fmax(m, rise / since);
    int tested = c->tested > 0 ? c->tested : 1;
    double p_raw = c->mk.p_increasing / tested;
    if (c->ts.slope > 0 && p_raw < 0.5 && p_raw > 0) {
        double z_obs = lw_normal_quantile(1 - p_raw),
               zt = lw_normal_quantile(1 - v->p->alpha / tested);
        if (z_obs > 0) m = fmax(m, c->ts.slope * zt / z_obs);
    }
    out->min_rate = m;
}

/* The guards on the chosen window: the cycle guard on the whole series
 * (a newer window may hold only the rising part of the latest cycle), then
 * the slowdown guards at the levels the hysteresis sets. */
static void run_guards(const series_view *v, const window_choice *c, int significant,
                       guard_findings *f) {
    const lw_detect_params *p = v->p;
    const double *x = v->x, *y = v->y;
    int n = v->n, w = c->w, all_ok = c->all_ok;
    const double *wx = x + (n - w), *wy = y + (n - w);
    memset(f, 0, sizeof *f);
    f->overruled = c->overruled;
    int wf = v->full - (n - w);
    if (wf < 4) wf = w;
    guard_result cyc = {0};
    double p_lows = NAN;
    int nf = v->full >= 4 ? v->full : n;
    int cycle = !f->overruled.name ? falls_back(x, y, nf, c->ts.slope, p->alpha_guard,
                                                p->alpha_keep, &cyc, &p_lows)
                                   : 0;
    if (cycle == 1) f->overruled = cyc;
    /* Hysteresis: a new leak verdict needs more than an announced one needs
     * to stand (the evidence of a steady leak only grows, so it never falls
     * back across the gap). On the whole series, an announced leak stands
     * while the trend holds at alpha_keep and no guard overrules it; a new
     * one also needs no guard to object even at alpha_enter. Once a guard
     * has rejected older data (the series decelerated), what is left is the
     * tail of a warm-up or a leak that began later: there a new verdict
     * needs no guard to object at alpha_fallback (a tail decelerates, a
     * leak does not), and an announced one needs the full trend test, no
     * guard at alpha_enter and its newest half still rising at
     * alpha_keep_recent (a tail's growth lies in the window's older part). */
    double enter_level = all_ok ? p->alpha_enter : p->alpha_fallback;
    double keep_level = all_ok ? p->alpha_guard : p->alpha_enter;
    /* In a newer window any slowdown holds a new verdict back, not only
     * one by half: there the series has already been seen to decelerate. */
    double enter_rho = all_ok ? LW_SLOWDOWN : 1.0;
    guard_result weak = {0};
    int unruled = !f->overruled.name; /* no guard overrules the trend */
    /* A flat window has no growth to stop (see growth_stops). */
    f->slowing = unruled && significant && !c->flat &&
                 growth_stops(wx, wy, wf, c->sigma_guard, enter_level, enter_rho, &f->early);
    f->slowed = unruled && !c->flat &&
                growth_stops(wx, wy, wf, c->sigma_guard, keep_level, LW_SLOWDOWN, &weak);
    f->lows_unclear = unruled && (cycle == 2 || (!isnan(p_lows) && !(p_lows < p->alpha)));
}

/* The verdict of this evaluation and whether an announced leak still
 * stands (supports_leak), from the trend and what the guards found. */
static void give_verdict(const series_view *v, const window_choice *c, int significant,
                         const guard_findings *f, lw_growth *out) {
    const lw_detect_params *p = v->p;
    out->supports_leak = !f->overruled.name && !f->slowed && c->ts.slope > 0 &&
                         (c->all_ok ? c->mk.p_increasing < p->alpha_keep
                                    : significant && out->p_recent < p->alpha_keep_recent);
    if (f->overruled.name && significant) {
        out->verdict = LW_VERDICT_NO_LEAK;
        out->overruled_by = f->overruled.name;
        out->guard_why = f->overruled.why;
        out->guard_p = f->overruled.p;
        out->reason = f->overruled.why;
    } else if (!significant && !f->overruled.name && growth_suggested(v, c)) {
        /* Growth the data show but do not yet confirm is no evidence of a
         * clean run: "no leak" would rule out what the same run measured. */
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->reason = "the floor rises, but not yet significantly: more steps needed";
    } else if (!significant) {
        out->verdict = LW_VERDICT_NO_LEAK;
        out->reason = "no significant growth of the floor";
    } else if (f->slowing) {
        out->verdict = LW_VERDICT_INCONCLUSIVE;
        out->guard_p = f->early.p;
        out->reason = !strcmp(f->early.name, LW_GUARD_DECELERATION)
                          ? "the floor grows, but may be decelerating: more steps needed"
                          : "the floor grows, but its newest third may have slowed: more steps "
                            "needed";
    } else if (f->lows_unclear) {
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
}

/* Where the growth began: the start of the bin where it began, with the
 * steps that bin covers (with coarse bins, "within steps 1-32", the same
 * start as the bins widen). */
static void place_onset(const series_view *v, const window_choice *c, lw_growth *out) {
    const lw_theil_sen_result *ts = &c->ts;
    double err =
        isfinite(ts->lo) && isfinite(ts->hi) ? fmax(ts->slope - ts->lo, ts->hi - ts->slope) : 0;
    int k = find_onset(v->x, v->y, v->n, c->w, ts->slope, ts->intercept, err > 0 ? err : 0);
    bin_range(&v->bins[k], &out->onset_lo, &out->onset_hi);
    out->onset_x = out->onset_lo;
}

int lw_detect(const lw_bin *bins, int n, const lw_detect_params *p, lw_growth *out) {
    detect_reset(out);
    if (n < p->min_points) {
        out->reason = "too few steps yet";
        return 0;
    }
    series_view v;
    if (!view_of(bins, n, p, &v)) {
        out->reason = "out of memory";
        return 0;
    }
    window_choice c;
    if (!choose_window(&v, &c)) {
        out->reason = "the statistics could not be computed";
        free(v.x);
        return 0;
    }
    describe_window(&v, &c, out);
    test_newest_half(&v, &c, out);
    sensitivity(&v, &c, out);
    int significant = is_significant(&v, &c);
    guard_findings f;
    run_guards(&v, &c, significant, &f);
    give_verdict(&v, &c, significant, &f, out);
    rule_out(&v, &c, out);
    if (out->verdict == LW_VERDICT_LEAK || out->supports_leak) place_onset(&v, &c, out);
    free(v.x);
    return 0;
}

int lw_detect_flat(const lw_bin *bins, int n) {
    lw_detect_params p = lw_detect_defaults();
    series_view v;
    if (n < 3 || !view_of(bins, n, &p, &v)) return 0;
    int flat = flat_window(v.x, v.y, n);
    free(v.x);
    return flat;
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
    } else if (g->verdict == LW_VERDICT_LEAK && d->consecutive < confirm) {
        d->announced = LW_VERDICT_INCONCLUSIVE;
        snprintf(d->reason, sizeof d->reason,
                 "the floor grows; confirming (%d of %d evaluations in a row)", d->consecutive,
                 confirm);
    } else if (g->verdict == LW_VERDICT_LEAK) {
        d->announced = LW_VERDICT_INCONCLUSIVE;
        snprintf(d->reason, sizeof d->reason,
                 "the floor grows again after a withdrawn verdict; confirming until %llu steps",
                 (unsigned long long)((3 * d->raw_leak_since + 1) / 2));
    } else {
        d->announced = g->verdict;
        snprintf(d->reason, sizeof d->reason, "%s", g->reason);
    }
    return d->announced;
}

int lw_decision_final(lw_decision *d, const lw_growth *g, double x) {
    if (d->announced == LW_VERDICT_LEAK || g->verdict != LW_VERDICT_LEAK) return 0;
    d->announced = LW_VERDICT_LEAK;
    d->first_leak_x = x;
    snprintf(d->reason, sizeof d->reason,
             "the floor grows steadily (decided at the end of the run, on all its data)");
    return 1;
}
