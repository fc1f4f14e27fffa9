/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics for telling a gradual leak from noise, warm-up and saturation
 * (README, "Leak detection"): Mann–Kendall trend test, Theil–Sen
 * slope with Sen's confidence interval, an effective-sample-size correction
 * for serially correlated series, and least-squares lines and parabolas.
 *
 * Every function is pure: no globals, no I/O, safe from any thread. Some
 * allocate scratch with malloc, so none may run on an allocation hot path;
 * the detector calls them on a few hundred binned points.
 *
 * Inputs containing NaN or ±Inf are rejected (return -1) rather than
 * skipped: a non-finite floor means a bug upstream, and silently dropping
 * points would change n, the variance and the time axis behind the caller's
 * back. Results are written only on success.
 *
 * Reference values for the tests come from tests/unit/reference/
 * stats_reference.py, an exact-arithmetic re-implementation. */
#ifndef LW_STATS_H
#define LW_STATS_H

/* Mann–Kendall trend test. S = sum over i<j of sign(y[j] - y[i]).
 * var_s is the tie-corrected variance
 *   [n(n-1)(2n+5) - sum_t t(t-1)(2t+5)] / 18     (t: sizes of groups of equal y),
 * z the continuity-corrected statistic (S-1)/sd for S>0, (S+1)/sd for S<0,
 * 0 for S=0; p_two_sided = 2(1 - Phi(|z|)).
 * p_increasing = 1 - Phi((S-1)/sd), the continuity-corrected P(S' >= S) for
 * every sign of S; for S > 0 (the only case a leak verdict uses) it is
 * 1 - Phi(z). For S <= 0 it exceeds 1/2, as it should (S = 0 has mass).
 * When every value is equal var_s is 0: z = 0 and both p-values are 1
 * (S is exactly 0, so P(S' >= S) = 1). tau = S / (n(n-1)/2), Kendall's tau-a. */
typedef struct {
    double s;
    double var_s;
    double z;
    double p_two_sided;
    double p_increasing;
    int n;
    double tau;
} lw_mk_result;

/* y[0..n) in time order. Returns 0, or -1 if n < 3, y is NULL or y holds a
 * non-finite value. O(n^2) time, O(n) scratch. */
int lw_mann_kendall(const double *y, int n, lw_mk_result *out);

/* How lw_mann_kendall_corrected_ex turns residual autocorrelations r_k into
 * the variance inflation n/n*. */
typedef enum {
    /* n/n* = 1 + 2/(n(n-1)(n-2)) * sum_k (n-k)(n-k-1)(n-k-2) r_k
     * (Hamed & Rao 1998 — the weights they derive for Var(S) of
     * autocorrelated ranks). */
    LW_ESS_WEIGHTS_CUBIC = 0,
    /* n/n* = 1 + 2 * sum_k (1 - k/n) r_k (Yue & Wang 2004, after Bayley &
     * Hammersley 1946 — the effective sample size of a mean). */
    LW_ESS_WEIGHTS_LINEAR = 1,
} lw_ess_weights;

typedef struct {
    /* Include lag k only when |r_k| > z_{1-lag_alpha/2} / sqrt(n) (Hamed &
     * Rao 1998 practice). <= 0 includes every lag — not recommended: the
     * biased sample autocorrelations satisfy sum_{k=1}^{n-1} r_k = -1/2
     * identically, so all-lag sums are pulled low and noisy. On the test's
     * AR(1) series (rho = 0.7, n = 120) all lags give n/n* = 0.45 with the
     * linear weights (a correction in the wrong direction) and 1.32 with
     * the cubic ones, against 2.81 with significant lags only. */
    double lag_alpha;
    /* Largest lag considered; <= 0 or >= n means n-1. */
    int max_lag;
    lw_ess_weights weights;
    /* 1: autocorrelation of the ranks (mid-ranks for ties) of the residuals,
     * as Hamed & Rao do — robust to a single wild floor; 0: of the residuals
     * themselves, as Yue & Wang do. Residuals within 1e-12 of the size of
     * the data's terms count as tied, so ties that are exact for integer
     * floors survive floating-point detrending. */
    int use_ranks;
    /* 0: the ratio is clamped to >= 1, so the correction can only make the
     * test more conservative; 1: keep a ratio below 1 (negative
     * autocorrelation). */
    int allow_below_one;
} lw_ess_opts;

/* The defaults lw_mann_kendall_corrected uses: significant lags (lag_alpha
 * 0.05) among all lags up to n-1, cubic weights (the formula in the design
 * brief), raw residuals (as in the growth-detection notes), clamped at 1.
 * A zero-initialised lw_ess_opts differs: lag_alpha 0 means every lag. */
lw_ess_opts lw_ess_opts_default(void);

/* Mann–Kendall with Var(S) inflated for serial correlation: the series is
 * detrended with its Theil–Sen slope (e_i = y_i - slope * x_i), r_k is the
 * usual biased sample autocorrelation of e (or of its ranks)
 *   r_k = sum_{i<n-k} (e_i - mean)(e_{i+k} - mean) / sum_i (e_i - mean)^2,
 * and var_s, z and both p-values in *out use var_s * ratio. *ess_ratio (may
 * be NULL) receives ratio = n/n*. A residual series with zero variance gives
 * ratio 1.
 * x may be NULL (x_i = i); otherwise it must be strictly increasing, since
 * lags are counted in index order. Returns 0, or -1 for n < 3, n above
 * LW_THEIL_SEN_MAX_N, non-finite input, or x not strictly increasing. */
int lw_mann_kendall_corrected(const double *x, const double *y, int n, lw_mk_result *out,
                              double *ess_ratio);
int lw_mann_kendall_corrected_ex(const double *x, const double *y, int n, const lw_ess_opts *opts,
                                 lw_mk_result *out, double *ess_ratio);

/* The ranks of the n(n-1)/2 pairwise slopes are found in one counting pass
 * that keeps only the slopes near them (a sampled band, about a tenth);
 * when the sample misses, every slope is stored: 16 MiB at n = 2048, 64 MiB
 * at the cap. The detector keeps a few hundred bins, far below it (n = 256:
 * ~0.2 ms, the detector's four windows ~1 ms, at -O2). */
#define LW_THEIL_SEN_MAX_N 4096

/* Theil–Sen slope: median of the slopes (y[j]-y[i])/(x[j]-x[i]) over pairs
 * with x[i] != x[j] (n_pairs of them). intercept = median(y - slope * x).
 * Sen's (1968) interval at level conf (0 < conf < 1):
 *   C = z_{(1+conf)/2} * sqrt(Var(S)),  M1 = (N - C)/2,  M2 = (N + C)/2,
 *   lo = the M1-th, hi = the (M2+1)-th smallest slope (1-based),
 * where Var(S) is Kendall's variance of S between x and y with ties in both
 * (it reduces to the Mann–Kendall formula when x has no ties). Fractional
 * ranks are rounded outwards: lo takes rank floor(M1), hi rank N+1-floor(M1),
 * so the interval is symmetric in rank and never narrower than the normal
 * approximation asks (coverage >= conf, as with exact-table intervals); this
 * reproduces Sen's 1968 worked example. When floor(M1) < 1 the data cannot
 * support that confidence and lo/hi are -/+INFINITY.
 * Returns 0, or -1 for n < 3, n > LW_THEIL_SEN_MAX_N, conf outside (0,1),
 * non-finite input, or all x equal. */
typedef struct {
    double slope, intercept, lo, hi;
    int n_pairs;
    double var_s; /* the Kendall Var(S) behind the interval */
} lw_theil_sen_result;
int lw_theil_sen(const double *x, const double *y, int n, double conf, lw_theil_sen_result *out);

/* lw_mann_kendall_corrected (default options) on data whose Theil–Sen
 * result ts the caller already has from lw_theil_sen(x, y, n, ...): the
 * residuals are taken about ts->slope instead of computing it again (the
 * same double: the median's ranks do not depend on the interval's), so the
 * results are bit for bit those of lw_mann_kendall_corrected. x must not be
 * NULL. Returns as lw_mann_kendall_corrected, and -1 when ts->slope is not
 * finite. */
int lw_mann_kendall_corrected_at(const double *x, const double *y, int n,
                                 const lw_theil_sen_result *ts, lw_mk_result *out,
                                 double *ess_ratio);

/* Least squares y = a + b x + c x^2. se_c is the standard error of c,
 * resid_sd = sqrt(RSS / (n - 3)). Solved by Householder QR on x centred and
 * scaled to [-1, 1], so x values like step numbers near 1e6 (x^2 ~ 1e12) lose
 * no accuracy to the normal equations' conditioning. The slope at x is
 * b + 2 c x. Returns 0, or -1 for n < 4, non-finite input or fewer than three
 * distinct x values. */
typedef struct {
    double a, b, c, se_c;
    double resid_sd;
} lw_quad_fit;
int lw_quadratic_fit(const double *x, const double *y, int n, lw_quad_fit *out);

/* Least squares y = intercept + slope x; resid_sd = sqrt(RSS / (n - 2)),
 * r2 = Sxy^2 / (Sxx Syy) (equal to 1 - RSS/SST, but always within [0, 1]),
 * and 0 when every y is equal (nothing to explain). Returns 0, or -1 for
 * n < 3, non-finite input or all x equal. */
typedef struct {
    double slope, intercept, resid_sd, r2;
} lw_linear_fit;
int lw_linear_fit_ols(const double *x, const double *y, int n, lw_linear_fit *out);

/* Phi(z), via erfc, so both tails keep full relative accuracy. */
double lw_normal_cdf(double z);
/* Phi^{-1}(p): Acklam's rational approximation, then one Halley step against
 * lw_normal_cdf. -INFINITY at 0, +INFINITY at 1, NaN outside [0, 1]. */
double lw_normal_quantile(double p);
/* Median of v[0..n) (the mean of the two middle values when n is even).
 * Reorders v. NaN when n <= 0 or v holds a NaN. Quickselect with a
 * three-way partition: O(n) expected, O(n log n) at worst (qsort fallback). */
double lw_median(double *v, int n);

#endif
