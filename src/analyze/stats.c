/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics for the growth detector. See stats.h for the contract of each
 * function and tests/unit/reference/stats_reference.py for the independent
 * exact-arithmetic implementation the tests compare against. */
#include "stats.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---- */

static int all_finite(const double *v, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void swap_d(double *a, double *b) {
    double t = *a;
    *a = *b;
    *b = t;
}

static double median3(double a, double b, double c) {
    if (a > b) swap_d(&a, &b);
    if (b > c) swap_d(&b, &c);
    if (a > b) swap_d(&a, &b);
    return b;
}

/* Sorts a[lo..hi) ascending by insertion (the small ranges of the
 * selection and of the inversion count); returns the inversions it undid,
 * the pairs i < j with a[i] > a[j]. */
static long long insertion_sort(double *a, size_t lo, size_t hi) {
    long long inv = 0;
    for (size_t i = lo + 1; i < hi; i++) {
        double v = a[i];
        size_t j = i;
        while (j > lo && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        inv += (long long)(i - j);
        a[j] = v;
    }
    return inv;
}

/* Rearranges a[0..n) so that a[k] holds the k-th smallest (0-based) value,
 * everything before it is <= a[k] and everything after is >= a[k].
 * Quickselect whose rounds split a range in three (below the pivot, equal to
 * it, above it): the pairwise slopes of an exactly linear series are all
 * equal, and a plain two-way partition would go quadratic on them (4e12 steps
 * at n = 2048). Each split is two branch-free Lomuto passes (the values
 * below the pivot to the front, then, only when the rank lies beyond them,
 * the values equal to it): the comparisons of random slopes cannot be
 * predicted, and a branch per value cost five times more. A budget of rounds
 * bounds the adversarial median-of-three cases by falling back to qsort. */
static void select_kth(double *a, size_t n, size_t k) {
    size_t lo = 0, hi = n;
    int budget = 16;
    for (size_t m = n; m > 1; m >>= 1)
        budget += 2;
    while (hi - lo > 16) {
        if (budget-- == 0) {
            qsort(a + lo, hi - lo, sizeof *a, cmp_double);
            return;
        }
        double p = median3(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]);
        size_t lt = lo;
        for (size_t i = lo; i < hi; i++) {
            double v = a[i];
            a[i] = a[lt];
            a[lt] = v;
            lt += v < p;
        }
        if (k < lt) {
            hi = lt;
            continue;
        }
        size_t le = lt; /* a[lt..hi) >= p: bring the ones equal to p forward */
        for (size_t i = lt; i < hi; i++) {
            double v = a[i];
            a[i] = a[le];
            a[le] = v;
            le += v <= p;
        }
        if (k < le) return; /* a[k] == p, already in place */
        lo = le;
    }
    (void)insertion_sort(a, lo, hi);
}

/* Order statistics at 0-based ranks ks[0..m), given in ascending order (equal
 * neighbours allowed). Each selection leaves everything above its rank to the
 * right, so the next one only searches that part. */
static void select_many(double *a, size_t n, const size_t *ks, int m, double *vals) {
    size_t base = 0;
    for (int i = 0; i < m; i++) {
        if (i > 0 && ks[i] == ks[i - 1]) {
            vals[i] = vals[i - 1];
            continue;
        }
        select_kth(a + base, n - base, ks[i] - base);
        vals[i] = a[ks[i]];
        base = ks[i] + 1;
    }
}

double lw_median(double *v, int n) {
    if (n <= 0 || !v) return NAN;
    for (int i = 0; i < n; i++)
        if (isnan(v[i])) return NAN;
    size_t k = (size_t)n / 2;
    select_kth(v, (size_t)n, k);
    if (n % 2) return v[k];
    /* The lower middle value is the largest of the part left of k. */
    double below = v[0];
    for (size_t i = 1; i < k; i++)
        if (v[i] > below) below = v[i];
    return below / 2 + v[k] / 2;
}

/* Sums over groups of equal values in sorted v[0..n): t(t-1)(2t+5),
 * t(t-1)(t-2) and t(t-1), the pieces of Kendall's tie-corrected Var(S). */
typedef struct {
    double a, b, c;
} tie_sums;

static tie_sums tie_sums_sorted(const double *v, int n) {
    tie_sums s = {0, 0, 0};
    int i = 0;
    while (i < n) {
        int j = i + 1;
        while (j < n && v[j] == v[i])
            j++;
        double t = j - i;
        if (t > 1) {
            s.a += t * (t - 1) * (2 * t + 5);
            s.b += t * (t - 1) * (t - 2);
            s.c += t * (t - 1);
        }
        i = j;
    }
    return s;
}

/* Sorts a[lo..hi) ascending (tmp: scratch of the same length as a) and
 * returns the pairs i < j with a[i] > a[j] (strictly): a merge sort that
 * takes the left element first on ties, so that when it takes a right
 * element every left element still waiting is strictly greater. No
 * callback per comparison (qsort's cost the detector paid at every tie
 * count); the order it gives is the ascending order of the values, so
 * the groups of equal values it leaves are the ones qsort left. */
static long long merge_count(double *a, double *tmp, int lo, int hi) {
    int n = hi - lo;
    if (n < 2) return 0;
    if (n <= 16) return insertion_sort(a, (size_t)lo, (size_t)hi);
    int mid = lo + n / 2;
    long long inv = merge_count(a, tmp, lo, mid) + merge_count(a, tmp, mid, hi);
    if (!(a[mid - 1] > a[mid])) return inv; /* already in order */
    int i = lo, j = mid, k = lo;
    while (i < mid && j < hi) {
        if (a[j] < a[i]) {
            inv += mid - i;
            tmp[k++] = a[j++];
        } else {
            tmp[k++] = a[i++];
        }
    }
    while (i < mid)
        tmp[k++] = a[i++];
    while (j < hi)
        tmp[k++] = a[j++];
    memcpy(a + lo, tmp + lo, (size_t)n * sizeof *a);
    return inv;
}

static int non_decreasing(const double *v, int n) {
    for (int i = 1; i < n; i++)
        if (v[i] < v[i - 1]) return 0;
    return 1;
}

/* Tie sums of v[0..n) (sorted in a copy unless already in order); -1 if
 * out of memory. */
static int tie_sums_of(const double *v, int n, tie_sums *out) {
    if (non_decreasing(v, n)) {
        *out = tie_sums_sorted(v, n);
        return 0;
    }
    double *w = malloc((size_t)n * 2 * sizeof *w);
    if (!w) return -1;
    memcpy(w, v, (size_t)n * sizeof *w);
    (void)merge_count(w, w + n, 0, n);
    *out = tie_sums_sorted(w, n);
    free(w);
    return 0;
}

/* Kendall (1970) variance of S with ties in both variables; with no ties in x
 * (tx all zero) it is the Mann–Kendall formula. */
static double kendall_var(int n, tie_sums tx, tie_sums ty) {
    double dn = n;
    double v = (dn * (dn - 1) * (2 * dn + 5) - tx.a - ty.a) / 18.0;
    v += tx.b * ty.b / (9.0 * dn * (dn - 1) * (dn - 2));
    v += tx.c * ty.c / (2.0 * dn * (dn - 1));
    return v;
}

/* Fills z and the p-values from S and its variance. */
static void mk_finish(double s, double var_s, int n, lw_mk_result *out) {
    out->s = s;
    out->var_s = var_s;
    out->n = n;
    out->tau = s / (0.5 * n * (n - 1.0));
    if (var_s <= 0) {
        /* Every value tied: S is exactly 0 and cannot be anything else. */
        out->z = 0;
        out->p_two_sided = 1;
        out->p_increasing = 1;
        return;
    }
    double sd = sqrt(var_s);
    out->z = s > 0 ? (s - 1) / sd : s < 0 ? (s + 1) / sd : 0;
    /* erfc keeps relative accuracy deep in the tails, where 1 - Phi would
     * round to 0 and a leak verdict would read p = 0. */
    out->p_two_sided = erfc(fabs(out->z) / M_SQRT2);
    if (out->p_two_sided > 1) out->p_two_sided = 1;
    /* P(S' >= S) with the continuity correction (S-1)/sd for every sign of S;
     * for S > 0 this is 1 - Phi(z). */
    out->p_increasing = 0.5 * erfc((s - 1) / (sd * M_SQRT2));
}

/* S = sum over i < j of sign(y[j] - y[i]) and the tie sums of y, in
 * O(n log n): with P = n(n-1)/2 pairs, T of them tied and D with
 * y[i] > y[j] (merge_count), the concordant ones are P - T - D, so
 * S = P - T - 2D, the same integer the pairwise count gives. */
static int mk_s_ties(const double *y, int n, long long *s, tie_sums *ty) {
    double *w = malloc((size_t)n * 2 * sizeof *w);
    if (!w) return -1;
    memcpy(w, y, (size_t)n * sizeof *w);
    long long d = merge_count(w, w + n, 0, n), tied = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && w[j] == w[i])
            j++;
        tied += (long long)(j - i) * (j - i - 1) / 2;
        i = j;
    }
    *ty = tie_sums_sorted(w, n);
    free(w);
    *s = (long long)n * (n - 1) / 2 - tied - 2 * d;
    return 0;
}

int lw_mann_kendall(const double *y, int n, lw_mk_result *out) {
    if (!y || !out || n < 3 || !all_finite(y, n)) return -1;
    tie_sums ty;
    long long s;
    if (mk_s_ties(y, n, &s, &ty)) return -1;
    tie_sums none = {0, 0, 0};
    mk_finish((double)s, kendall_var(n, none, ty), n, out);
    return 0;
}

/* ---- Theil–Sen ---- */

/* The slope of pair (i, j), i < j, x[i] != x[j]: every path computes it by
 * this one expression, so every path sees the same doubles. */
static inline double pair_slope(const double *x, const double *y, int i, int j) {
    return (y[j] - y[i]) / (x[j] - x[i]);
}

/* All slopes over pairs with distinct x into a fresh array; NULL when out of
 * memory. */
static double *pair_slopes(const double *x, const double *y, int n, size_t *count) {
    size_t cap = (size_t)n * (size_t)(n - 1) / 2, m = 0;
    double *d = malloc(cap * sizeof *d);
    if (!d) return NULL;
    for (int i = 0; i < n - 1; i++)
        for (int j = i + 1; j < n; j++)
            if (x[j] != x[i]) d[m++] = pair_slope(x, y, i, j);
    *count = m;
    return d;
}

static double median_of_residuals(const double *x, const double *y, int n, double slope, int *err) {
    double *r = malloc((size_t)n * sizeof *r);
    if (!r) {
        *err = 1;
        return NAN;
    }
    for (int i = 0; i < n; i++)
        r[i] = y[i] - slope * x[i];
    double m = lw_median(r, n);
    free(r);
    return m;
}

/* ---- order statistics of the pair slopes without storing them ---- */

/* Below this many pairs the slopes are stored and selected in place. */
#define TS_FAST_MIN_PAIRS 4096
#define TS_SAMPLE 1024

/* A band [a, b] of slope values meant to hold the ranks ks[first..last]:
 * how many slopes lie below a, at most a, below b, at most b, and the ones
 * strictly between a and b (up to cap of them). */
typedef struct {
    double a, b;
    int lo_i, hi_i; /* a and b's indices in the sorted sample */
    int first, last;
    size_t lt_a, le_a, lt_b, le_b, len, cap;
    double *buf;
} ts_band;

static uint32_t ts_rand(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

/* The ranks ks[0..m) (0-based, ascending) of the N slopes over pairs with
 * distinct x, into vals, exactly as sorting them would give, in two passes
 * over the pairs and without storing them: a random sample of the slopes
 * brackets each rank with a band [a, b] (Floyd–Rivest), one pass counts the
 * slopes below and at each band's ends and keeps the few strictly inside,
 * and the ranks are selected among those. Returns 1 when the sample missed a
 * rank, a band overflowed, a slope is NaN or memory ran out: the caller then
 * stores all the slopes and selects among them. */
static inline void band_count(ts_band *bd, double d) {
    bd->lt_a += d < bd->a;
    bd->le_a += d <= bd->a;
    bd->lt_b += d < bd->b;
    bd->le_b += d <= bd->b;
    /* Branch-free: the slot past the last kept one is always writable. */
    bd->buf[bd->len < bd->cap ? bd->len : bd->cap] = d;
    bd->len += d > bd->a && d < bd->b;
}

/* The counting pass over every pair with distinct x (x_ties: x has equal
 * values, so pairs must be checked). */
static void count_bands(const double *x, const double *y, int n, int x_ties, ts_band *band,
                        int nb) {
    if (nb == 1 && band[0].a == band[0].b) {
        /* A band of one value (an exactly linear or flat series: its slopes
         * nearly all equal): nothing lies strictly inside, and the counts at
         * b are those at a. */
        const double a = band[0].a;
        size_t lt = 0, le = 0;
        for (int i = 0; i < n - 1; i++)
            for (int j = i + 1; j < n; j++)
                if (!x_ties || x[j] != x[i]) {
                    double d = pair_slope(x, y, i, j);
                    lt += d < a;
                    le += d <= a;
                }
        band[0].lt_a = band[0].lt_b = lt;
        band[0].le_a = band[0].le_b = le;
        return;
    }
    if (nb == 1) {
        ts_band b0 = band[0]; /* a local copy the compiler keeps in registers */
        for (int i = 0; i < n - 1; i++)
            for (int j = i + 1; j < n; j++)
                if (!x_ties || x[j] != x[i]) band_count(&b0, pair_slope(x, y, i, j));
        band[0] = b0;
        return;
    }
    for (int i = 0; i < n - 1; i++)
        for (int j = i + 1; j < n; j++) {
            if (x_ties && x[j] == x[i]) continue;
            double d = pair_slope(x, y, i, j);
            for (int k = 0; k < nb; k++)
                band_count(&band[k], d);
        }
}

/* The ranks ks[0..m) (0-based, ascending) of the N slopes over pairs with
 * distinct x, into vals, exactly as sorting them would give, in one pass
 * over the pairs and without storing them: a random sample of the slopes
 * brackets each rank with a band [a, b] (Floyd–Rivest), the pass counts the
 * slopes below and at each band's ends and keeps the few strictly inside,
 * and the ranks are selected among those. Returns 1 when the sample missed a
 * rank, a band overflowed, a slope could be NaN or memory ran out: the
 * caller then stores all the slopes and selects among them. */
static int select_pair_slopes(const double *x, const double *y, int n, size_t N, int x_ties,
                              const size_t *ks, int m, double *vals) {
    /* Finite x and y this far from overflow: every slope is a number
     * (finite, or infinite over a subnormal x step), never NaN. */
    for (int i = 0; i < n; i++)
        if (!(fabs(x[i]) < 1e300 && fabs(y[i]) < 1e300)) return 1;
    double sample[TS_SAMPLE];
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)N;
    int got = 0;
    for (int tries = 0; got < TS_SAMPLE && tries < 8 * TS_SAMPLE; tries++) {
        int i = (int)(ts_rand(&seed) % (uint32_t)n), j = (int)(ts_rand(&seed) % (uint32_t)n);
        if (i == j || x[i] == x[j]) continue;
        sample[got++] = i < j ? pair_slope(x, y, i, j) : pair_slope(x, y, j, i);
    }
    if (got < TS_SAMPLE) return 1;

    /* Each rank's band in sample ranks: its expected place +- 3.5 standard
     * deviations of a sample quantile; overlapping bands merge. */
    ts_band band[4];
    int nb = 0;
    for (int r = 0; r < m; r++) {
        double p = ((double)ks[r] + 0.5) / (double)N;
        double c = p * TS_SAMPLE, delta = 3.5 * sqrt(TS_SAMPLE * p * (1 - p)) + 3;
        int lo_i = (int)floor(c - delta), hi_i = (int)ceil(c + delta);
        if (nb > 0 && lo_i <= band[nb - 1].hi_i) {
            if (hi_i > band[nb - 1].hi_i) band[nb - 1].hi_i = hi_i;
            band[nb - 1].last = r;
            continue;
        }
        band[nb++] = (ts_band){.lo_i = lo_i, .hi_i = hi_i, .first = r, .last = r};
    }
    /* The band ends are order statistics of the sample. */
    size_t at[8] = {0}; /* zeroed: GCC's ASan build cannot see that na counts the set ones */
    double end[8] = {0};
    int na = 0;
    for (int k = 0; k < nb; k++) {
        if (band[k].lo_i >= 0) at[na++] = (size_t)band[k].lo_i;
        if (band[k].hi_i < TS_SAMPLE) at[na++] = (size_t)band[k].hi_i;
    }
    select_many(sample, TS_SAMPLE, at, na, end);
    size_t total = 0;
    for (int k = 0, q = 0; k < nb; k++) {
        ts_band *bd = &band[k];
        bd->a = bd->lo_i < 0 ? -INFINITY : end[q++];
        bd->b = bd->hi_i >= TS_SAMPLE ? INFINITY : end[q++];
        int lo = bd->lo_i < 0 ? 0 : bd->lo_i, hi = bd->hi_i >= TS_SAMPLE ? TS_SAMPLE : bd->hi_i;
        /* Twice the expected count inside, and some. */
        double want = 2.0 * (double)(hi - lo) / TS_SAMPLE * (double)N + 64;
        bd->cap = want < (double)N ? (size_t)want : N;
        total += bd->cap + 1;
    }
    double *mem = malloc(total * sizeof *mem);
    if (!mem) return 1;
    for (int k = 0, off = 0; k < nb; off += (int)band[k].cap + 1, k++)
        band[k].buf = mem + off;

    count_bands(x, y, n, x_ties, band, nb);

    int bad = 0;
    for (int k = 0; k < nb && !bad; k++) {
        ts_band *bd = &band[k];
        if (bd->len > bd->cap) {
            bad = 1;
            break;
        }
        /* Ranks in [le_a, lt_b) lie strictly inside: the buffer holds them. */
        size_t inner[4];
        int ni = 0;
        for (int r = bd->first; r <= bd->last; r++) {
            size_t kr = ks[r];
            if (kr < bd->lt_a || kr >= bd->le_b) {
                bad = 1;
                break;
            }
            if (kr < bd->le_a)
                vals[r] = bd->a;
            else if (kr >= bd->lt_b)
                vals[r] = bd->b;
            else
                inner[ni++] = kr - bd->le_a;
        }
        if (bad || ni == 0) continue;
        double iv[4];
        select_many(bd->buf, bd->len, inner, ni, iv);
        for (int r = bd->first, q = 0; r <= bd->last; r++)
            if (ks[r] >= bd->le_a && ks[r] < bd->lt_b) vals[r] = iv[q++];
    }
    free(mem);
    return bad;
}

/* A flat series on a non-decreasing x: every y the same bits (so y[j] - y[i]
 * is +0, never -0 as -0.0 - 0.0 would be) and x[j] - x[i] > 0 for every
 * pair of distinct x. The floor of a job that does not leak is often this. */
static int flat_rising(const double *x, const double *y, int n) {
    for (int i = 1; i < n; i++)
        if (memcmp(&y[i], &y[0], sizeof y[0]) != 0 || x[i] < x[i - 1]) return 0;
    return 1;
}

/* A series flat but for its first point on a rising x: y[1..n) the same
 * bits c (not -0), x strictly increasing. A series that moved only at its
 * start is often this: pinned memory that is 0 at the point of the step
 * that pinned it, then the same few bytes; a caching allocator's segments
 * reserved in the first step. */
static int flat_but_first(const double *x, const double *y, int n) {
    if (n < 3 || (y[1] == 0 && signbit(y[1]))) return 0;
    for (int i = 1; i < n; i++)
        if (memcmp(&y[i], &y[1], sizeof y[0]) != 0 || !(x[i] > x[i - 1])) return 0;
    return 1;
}

/* The ranks ks[0..m) (0-based, ascending) of the pair slopes of a series
 * flat_but_first, into vals, as sorting them gives: a pair (i, j) with
 * 0 < i < j has the slope (c - c) / (x[j] - x[i] > 0) = +0, and the n - 1
 * pairs (0, j) their own slopes (pair_slope, the same doubles). When none
 * of those is 0, the slopes sorted are the +0s and those n - 1 values
 * sorted, the +0s after the negative ones and before the positive ones,
 * each value's bits the only ones it has; so each rank is a +0 or a rank
 * among the n - 1. Returns 1 (nothing written) when a (0, j) slope is 0
 * (a +0 or -0 among the +0s: sorting would not say which comes first) or
 * memory runs out: the caller selects among all the slopes. */
static int first_point_slopes(const double *x, const double *y, int n, const size_t *ks, int m,
                              double *vals) {
    size_t N = (size_t)n * (size_t)(n - 1) / 2, zeros = N - (size_t)(n - 1);
    double *d = malloc((size_t)(n - 1) * sizeof *d);
    if (!d) return 1;
    for (int j = 1; j < n; j++) {
        d[j - 1] = pair_slope(x, y, 0, j);
        if (d[j - 1] == 0) {
            free(d);
            return 1;
        }
    }
    /* The (0, j) slopes all have the sign of c - y[0]: below the +0s when
     * negative, above them when positive. */
    size_t below = d[0] < 0 ? (size_t)(n - 1) : 0, at[4];
    int na = 0;
    for (int r = 0; r < m; r++)
        if (below ? ks[r] < below : ks[r] >= zeros) at[na++] = below ? ks[r] : ks[r] - zeros;
    double got[4];
    select_many(d, (size_t)(n - 1), at, na, got);
    for (int r = 0, q = 0; r < m; r++)
        vals[r] = (below ? ks[r] < below : ks[r] >= zeros) ? got[q++] : 0.0;
    free(d);
    return 0;
}

/* Theil–Sen slope and, when conf > 0, Sen's interval. */
static int theil_sen_core(const double *x, const double *y, int n, double conf,
                          lw_theil_sen_result *out) {
    tie_sums tx, ty;
    if (tie_sums_of(x, n, &tx) || tie_sums_of(y, n, &ty)) return -1;
    /* The pairs with distinct x: all pairs less those within each group of
     * equal x (tx.c sums t(t-1) over the groups). */
    size_t N = (size_t)n * (size_t)(n - 1) / 2 - (size_t)(tx.c / 2);
    if (N == 0) return -1;
    size_t ks[4];
    int m = 0;
    long k_lo = 0;
    double var_s = NAN;
    if (conf > 0) {
        var_s = kendall_var(n, tx, ty);
        double c = lw_normal_quantile(0.5 + conf / 2) * sqrt(var_s);
        /* Rank M1 = (N - C)/2 rounded down (1-based); the upper rank is its
         * mirror N + 1 - k_lo = ceil(M2 + 1). The small tolerance keeps an
         * M1 that is an integer in exact arithmetic from dropping a rank. */
        k_lo = (long)floor(((double)N - c) / 2 + 1e-9);
        if (k_lo >= 1) ks[m++] = (size_t)k_lo - 1;
    }
    int med_at = m;
    ks[m++] = (N - 1) / 2;
    ks[m++] = N / 2;
    if (k_lo >= 1) ks[m++] = N - (size_t)k_lo;
    double vals[4];
    if (flat_rising(x, y, n)) {
        /* Every slope is (+0)/(positive): +0, whatever its rank. */
        for (int r = 0; r < m; r++)
            vals[r] = 0.0;
    } else if (flat_but_first(x, y, n) && !first_point_slopes(x, y, n, ks, m, vals)) {
        /* Its slopes known in O(n), not sampled and counted over every pair. */
    } else if (N < TS_FAST_MIN_PAIRS || select_pair_slopes(x, y, n, N, tx.c > 0, ks, m, vals)) {
        size_t got;
        double *d = pair_slopes(x, y, n, &got);
        if (!d) return -1;
        select_many(d, got, ks, m, vals);
        free(d);
    }
    out->slope = vals[med_at] / 2 + vals[med_at + 1] / 2;
    if (vals[med_at] == vals[med_at + 1]) out->slope = vals[med_at];
    out->n_pairs = (int)N;
    out->var_s = var_s;
    out->lo = k_lo >= 1 ? vals[0] : -INFINITY;
    out->hi = k_lo >= 1 ? vals[m - 1] : INFINITY;
    int err = 0;
    out->intercept = median_of_residuals(x, y, n, out->slope, &err);
    return err ? -1 : 0;
}

int lw_theil_sen(const double *x, const double *y, int n, double conf, lw_theil_sen_result *out) {
    if (!x || !y || !out || n < 3 || n > LW_THEIL_SEN_MAX_N) return -1;
    if (!(conf > 0 && conf < 1)) return -1;
    if (!all_finite(x, n) || !all_finite(y, n)) return -1;
    lw_theil_sen_result r;
    if (theil_sen_core(x, y, n, conf, &r)) return -1;
    *out = r;
    return 0;
}

/* ---- Mann–Kendall with effective-sample-size correction ---- */

lw_ess_opts lw_ess_opts_default(void) {
    lw_ess_opts o = {.lag_alpha = 0.05,
                     .max_lag = 0,
                     .weights = LW_ESS_WEIGHTS_CUBIC,
                     .use_ranks = 0,
                     .allow_below_one = 0};
    return o;
}

typedef struct {
    double v;
    int i;
} val_idx;

static int cmp_val_idx(const void *a, const void *b) {
    const val_idx *p = a, *q = b;
    if (p->v != q->v) return (p->v > q->v) - (p->v < q->v);
    return (p->i > q->i) - (p->i < q->i);
}

/* Replaces e[0..n) by its ranks, 1..n, tied values sharing their mean rank.
 * Values within tol of their sorted neighbour count as tied. */
static int to_midranks(double *e, int n, double tol) {
    val_idx *t = malloc((size_t)n * sizeof *t);
    if (!t) return -1;
    for (int i = 0; i < n; i++)
        t[i] = (val_idx){e[i], i};
    qsort(t, (size_t)n, sizeof *t, cmp_val_idx);
    int i = 0;
    while (i < n) {
        int j = i + 1;
        while (j < n && t[j].v - t[j - 1].v <= tol)
            j++;
        double rank = (i + 1 + j) / 2.0; /* mean of ranks i+1 .. j */
        for (int k = i; k < j; k++)
            e[t[k].i] = rank;
        i = j;
    }
    free(t);
    return 0;
}

/* The lag sums ck = sum_{i < n-k} e[i] e[i+k] of residuals that are the
 * same bits b from e[1] on (a series flat but for its first point, about a
 * slope of 0), added in the order ess_ratio_of adds them: 0 + e[0] b, then
 * b b, n - k - 1 times. Each ck is a prefix of one running sum: ck =
 * sums[n - k - 1], every step the same expression as the loop's, so the
 * same doubles, in O(n) for all k instead of O(n^2). NULL when e is not so
 * (or out of memory): the caller adds them up. */
static double *lag_sums_flat_but_first(const double *e, int n) {
    if (n < 3) return NULL;
    for (int i = 2; i < n; i++)
        if (memcmp(&e[i], &e[1], sizeof e[0]) != 0) return NULL;
    double *sums = malloc((size_t)(n - 1) * sizeof *sums);
    if (!sums) return NULL;
    double ck = 0;
    ck += e[0] * e[1];
    sums[0] = ck;
    for (int m = 1; m < n - 1; m++) {
        ck += e[1] * e[1];
        sums[m] = ck;
    }
    return sums;
}

/* n/n* from the residuals e[0..n) (overwritten when ranks are used). */
static int ess_ratio_of(double *e, int n, const lw_ess_opts *o, double tie_tol, double *ratio) {
    if (o->use_ranks && to_midranks(e, n, tie_tol)) return -1;
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += e[i];
    mean /= n;
    double c0 = 0;
    for (int i = 0; i < n; i++) {
        e[i] -= mean;
        c0 += e[i] * e[i];
    }
    if (c0 <= 0) {
        /* The Theil–Sen line passes through every point: nothing is left to
         * be correlated. */
        *ratio = 1;
        return 0;
    }
    int max_lag = (o->max_lag <= 0 || o->max_lag >= n) ? n - 1 : o->max_lag;
    double thr = o->lag_alpha > 0 ? lw_normal_quantile(1 - o->lag_alpha / 2) / sqrt((double)n) : -1;
    double *first = lag_sums_flat_but_first(e, n);
    double dn = n, sum = 0;
    for (int k = 1; k <= max_lag; k++) {
        double ck = 0;
        if (first)
            ck = first[n - k - 1];
        else
            for (int i = 0; i + k < n; i++)
                ck += e[i] * e[i + k];
        double r = ck / c0;
        if (thr >= 0 && !(fabs(r) > thr)) continue;
        if (o->weights == LW_ESS_WEIGHTS_LINEAR)
            sum += (1 - k / dn) * r;
        else
            sum += (dn - k) * (dn - k - 1) * (dn - k - 2) * r;
    }
    double q = o->weights == LW_ESS_WEIGHTS_LINEAR ? 1 + 2 * sum
                                                   : 1 + 2 * sum / (dn * (dn - 1) * (dn - 2));
    if (!o->allow_below_one && q < 1) q = 1;
    /* Even when asked to keep ratios below 1, a non-positive one (only noisy
     * all-lag sums reach it) would make the variance meaningless. */
    if (q < 1 / dn) q = 1 / dn;
    *ratio = q;
    free(first);
    return 0;
}

/* known_slope: the Theil–Sen slope of (x, y) when the caller has it (the
 * same double theil_sen_core gives: the median ranks do not depend on the
 * interval's), or NULL to compute it. */
static int mk_corrected(const double *x, const double *y, int n, const lw_ess_opts *opts,
                        const double *known_slope, lw_mk_result *out, double *ess_ratio) {
    if (!y || !out || n < 3 || n > LW_THEIL_SEN_MAX_N || !all_finite(y, n)) return -1;
    if (x) {
        if (!all_finite(x, n)) return -1;
        for (int i = 1; i < n; i++)
            if (!(x[i] > x[i - 1])) return -1;
    }
    lw_ess_opts o = opts ? *opts : lw_ess_opts_default();
    lw_mk_result mk;
    if (lw_mann_kendall(y, n, &mk)) return -1;

    double *xs = malloc((size_t)n * sizeof *xs), *e = malloc((size_t)n * sizeof *e);
    int rc = -1;
    if (!xs || !e) goto done;
    for (int i = 0; i < n; i++)
        xs[i] = x ? x[i] : i;
    lw_theil_sen_result ts;
    if (known_slope)
        ts.slope = *known_slope;
    else if (theil_sen_core(xs, y, n, 0, &ts))
        goto done;
    /* Residuals about the first point, not the origin: floors sit near 4e9,
     * where a double resolves only ~5e-7, and the autocorrelations are
     * built from deviations of a few hundred bytes. The shift is a constant
     * and leaves every r_k unchanged. */
    double scale = 0;
    for (int i = 0; i < n; i++) {
        double dy = y[i] - y[0], trend = ts.slope * (xs[i] - xs[0]);
        e[i] = dy - trend;
        scale = fmax(scale, fmax(fabs(dy), fabs(trend)));
    }
    /* Residuals that are equal in exact arithmetic (integer floors, a
     * rational slope) come out a few ulps of the terms apart; ranks must
     * still see them as ties, and distinct residuals of integer data differ
     * by at least 1/(2n), far above this. */
    double tie_tol = 1e-12 * scale;
    double ratio;
    if (ess_ratio_of(e, n, &o, tie_tol, &ratio)) goto done;
    mk_finish(mk.s, mk.var_s * ratio, n, out);
    if (ess_ratio) *ess_ratio = ratio;
    rc = 0;
done:
    free(xs);
    free(e);
    return rc;
}

int lw_mann_kendall_corrected_ex(const double *x, const double *y, int n, const lw_ess_opts *opts,
                                 lw_mk_result *out, double *ess_ratio) {
    return mk_corrected(x, y, n, opts, NULL, out, ess_ratio);
}

int lw_mann_kendall_corrected(const double *x, const double *y, int n, lw_mk_result *out,
                              double *ess_ratio) {
    return mk_corrected(x, y, n, NULL, NULL, out, ess_ratio);
}

int lw_mann_kendall_corrected_at(const double *x, const double *y, int n,
                                 const lw_theil_sen_result *ts, lw_mk_result *out,
                                 double *ess_ratio) {
    if (!x || !ts || !isfinite(ts->slope)) return -1;
    return mk_corrected(x, y, n, NULL, &ts->slope, out, ess_ratio);
}

/* ---- least squares ---- */

static int distinct_at_least(const double *x, int n, int want) {
    double *w = NULL;
    if (!non_decreasing(x, n)) {
        w = malloc((size_t)n * 2 * sizeof *w);
        if (!w) return -1;
        memcpy(w, x, (size_t)n * sizeof *w);
        (void)merge_count(w, w + n, 0, n);
        x = w;
    }
    int d = 1;
    for (int i = 1; i < n && d < want; i++)
        d += x[i] != x[i - 1];
    free(w);
    return d >= want;
}

int lw_linear_fit_ols(const double *x, const double *y, int n, lw_linear_fit *out) {
    if (!x || !y || !out || n < 3 || !all_finite(x, n) || !all_finite(y, n)) return -1;
    /* Two passes about the means: Sxx from raw sums would cancel
     * catastrophically for x near 1e6 and y near 4e9. */
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    double sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (!(sxx > 0)) return -1;
    double slope = sxy / sxx;
    double rss = 0;
    for (int i = 0; i < n; i++) {
        double r = (y[i] - my) - slope * (x[i] - mx);
        rss += r * r;
    }
    out->slope = slope;
    out->intercept = my - slope * mx;
    out->resid_sd = sqrt(rss / (n - 2));
    double r2 = syy > 0 ? (sxy / sxx) * (sxy / syy) : 0;
    out->r2 = r2 > 1 ? 1 : r2;
    return 0;
}

int lw_quadratic_fit(const double *x, const double *y, int n, lw_quad_fit *out) {
    if (!x || !y || !out || n < 4 || !all_finite(x, n) || !all_finite(y, n)) return -1;
    int distinct = distinct_at_least(x, n, 3);
    if (distinct != 1) return -1;

    /* Centre y as well: floors near 4e9 carry ~5e-7 of rounding per value,
     * and the curvature of a slow leak is a tiny fraction of that level;
     * fitting deviations from the mean gains the ratio of the two in
     * accuracy of c. */
    double m = 0, my = 0;
    for (int i = 0; i < n; i++) {
        m += x[i];
        my += y[i];
    }
    m /= n;
    my /= n;
    double s = 0;
    for (int i = 0; i < n; i++)
        if (fabs(x[i] - m) > s) s = fabs(x[i] - m);

    /* Design matrix [1 t t^2], t = (x - m)/s in [-1, 1], column-major, and a
     * copy of y that becomes Q^T y. */
    double *A = malloc((size_t)n * 4 * sizeof *A);
    if (!A) return -1;
    double *qy = A + 3 * (size_t)n;
    for (int i = 0; i < n; i++) {
        double t = (x[i] - m) / s;
        A[i] = 1;
        A[n + i] = t;
        A[2 * n + i] = t * t;
        qy[i] = y[i] - my;
    }
    /* Householder QR: column j is reflected onto e_j; the reflector is
     * applied to the later columns and to qy, then R[j][j] = alpha. */
    double R[3][3] = {{0}};
    int rc = -1;
    for (int j = 0; j < 3; j++) {
        double *cj = A + (size_t)j * n;
        double norm = 0;
        for (int i = j; i < n; i++)
            norm += cj[i] * cj[i];
        norm = sqrt(norm);
        if (!(norm > 0)) goto done;
        double alpha = cj[j] > 0 ? -norm : norm;
        cj[j] -= alpha; /* v = column - alpha e_j, stored in place */
        double vv = 0;
        for (int i = j; i < n; i++)
            vv += cj[i] * cj[i];
        for (int k = j + 1; k <= 3; k++) {
            double *ck = A + (size_t)k * n; /* k == 3 is qy */
            double dot = 0;
            for (int i = j; i < n; i++)
                dot += cj[i] * ck[i];
            double f = 2 * dot / vv;
            for (int i = j; i < n; i++)
                ck[i] -= f * cj[i];
        }
        R[j][j] = alpha;
        for (int k = j + 1; k < 3; k++)
            R[j][k] = A[(size_t)k * n + j];
    }
    double g = qy[2] / R[2][2];
    double be = (qy[1] - R[1][2] * g) / R[1][1];
    double al = (qy[0] - R[0][1] * be - R[0][2] * g) / R[0][0];
    double rss = 0;
    for (int i = 0; i < n; i++) {
        double t = (x[i] - m) / s;
        double r = (y[i] - my) - (al + be * t + g * t * t);
        rss += r * r;
    }
    double sd = sqrt(rss / (n - 3));
    /* Back to x: y = my + al + be (x-m)/s + g (x-m)^2/s^2. */
    double s2 = s * s;
    out->c = g / s2;
    out->b = be / s - 2 * g * m / s2;
    out->a = my + al - be * m / s + g * m * m / s2;
    /* Var(g) = sigma^2 [(R^T R)^-1]_33 = sigma^2 / R_33^2, since the last
     * row of R^-1 is (0, 0, 1/R_33). */
    out->se_c = sd / fabs(R[2][2]) / s2;
    out->resid_sd = sd;
    rc = 0;
done:
    free(A);
    return rc;
}

/* ---- normal distribution ---- */

double lw_normal_cdf(double z) {
    return 0.5 * erfc(-z / M_SQRT2);
}

/* Acklam's approximation for p <= 0.5 (relative error < 1.15e-9). */
static double acklam_lower(double p) {
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double lw_normal_quantile(double p) {
    if (isnan(p) || p < 0 || p > 1) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    /* Work in the lower tail, where Phi(x) - p has full relative accuracy;
     * 1 - p is exact for p >= 0.5. */
    if (p > 0.5) return -lw_normal_quantile(1 - p);
    double x = acklam_lower(p);
    /* One Halley step on Phi(x) - p = 0: f/f' = e sqrt(2 pi) exp(x^2/2).
     * For subnormal p (|x| > 37.7) exp(x^2/2) overflows; Acklam's 1e-9
     * relative accuracy is kept there. */
    double e = lw_normal_cdf(x) - p;
    double u = e * sqrt(2 * M_PI) * exp(x * x / 2);
    if (isfinite(u)) x -= u / (1 + x * u / 2);
    return x;
}
