#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reference values for tests/unit/test_stats.c, computed independently of
src/analyze/stats.c.

Pure standard library. Everything that can be exact is exact:
  * Mann-Kendall S and the tie-corrected Var(S) in integers/Fractions, and the
    variance formula itself is re-derived by enumerating every permutation of
    small tied series (the exact permutation variance);
  * Theil-Sen slopes as Fractions, fully sorted (the C code uses quickselect);
  * least-squares fits solved exactly over the rationals from the normal
    equations (the C code uses Householder QR on centred x);
  * residual autocorrelations for the effective-sample-size ratio as Fractions;
  * the normal distribution from its Taylor series in 80-digit Decimal, the
    quantile by bisection and Newton in Decimal (the C code uses erfc and
    Acklam's approximation).
Published worked examples are checked first (see check_published()).

Usage:
  stats_reference.py            print the generated C block
  stats_reference.py --check F  exit 1 unless F contains exactly that block
"""

import itertools
import math
import sys
from decimal import Decimal as D, getcontext
from fractions import Fraction as F

getcontext().prec = 80
PI = D("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863")


# ---------------------------------------------------------------- normal law

def _dec(q):
    """Fraction or int -> Decimal at the working precision."""
    q = F(q)
    return D(q.numerator) / D(q.denominator)


def norm_pdf(z):
    return (-(z * z) / 2).exp() / (2 * PI).sqrt()


def _series_cdf(z):
    """Phi(z) = 1/2 + pdf(z) * sum_k z^(2k+1) / (1*3*...*(2k+1))."""
    term = z
    total = z
    k = 1
    z2 = z * z
    eps = D(10) ** -(getcontext().prec + 5)
    while abs(term) > eps * (abs(total) + 1):
        term = term * z2 / (2 * k + 1)
        total += term
        k += 1
    return D(1) / 2 + norm_pdf(z) * total


def _cf_upper_tail(z, depth):
    """1 - Phi(z) for z > 0 by Laplace's continued fraction
    pdf(z) / (z + 1/(z + 2/(z + 3/(z + ...)))), evaluated backwards."""
    f = z
    for k in range(depth, 0, -1):
        f = z + k / f
    return norm_pdf(z) / f


def norm_cdf(z):
    """The series for |z| <= 5 (80 digits absorb its cancellation); the
    continued fraction in the tails, checked against twice its depth."""
    z = D(z)
    if abs(z) <= 5:
        return _series_cdf(z)
    q = _cf_upper_tail(abs(z), 4000)
    assert abs(q - _cf_upper_tail(abs(z), 8000)) <= q * D("1e-40")
    return q if z < 0 else D(1) - q


def norm_sf(z):
    """1 - Phi(z) without cancellation: Phi(-z)."""
    return norm_cdf(-D(z))


def norm_quantile(p):
    p = _dec(p)
    lo, hi = D(-40), D(40)
    for _ in range(60):  # bisection to ~1e-17, then Newton
        mid = (lo + hi) / 2
        if norm_cdf(mid) < p:
            lo = mid
        else:
            hi = mid
    x = (lo + hi) / 2
    for _ in range(8):
        x = x - (norm_cdf(x) - p) / norm_pdf(x)
    return D(0) if abs(x) < D("1e-70") else x  # Phi^-1(1/2) is exactly 0


# -------------------------------------------------------------- Mann-Kendall

def sign(v):
    return (v > 0) - (v < 0)


def mk_s(y):
    n = len(y)
    return sum(sign(F(y[j]) - F(y[i])) for i in range(n) for j in range(i + 1, n))


def tie_groups(v):
    counts = {}
    for a in v:
        counts[F(a)] = counts.get(F(a), 0) + 1
    return [t for t in counts.values() if t > 1]


def kendall_var(x, y):
    """Kendall (1970, eq. 4.4) variance of S with ties in x (u) and y (t)."""
    n = len(y)
    u = tie_groups(x)
    t = tie_groups(y)
    v = F(n * (n - 1) * (2 * n + 5)
          - sum(a * (a - 1) * (2 * a + 5) for a in u)
          - sum(a * (a - 1) * (2 * a + 5) for a in t), 18)
    v += F(sum(a * (a - 1) * (a - 2) for a in u) * sum(a * (a - 1) * (a - 2) for a in t),
           9 * n * (n - 1) * (n - 2))
    v += F(sum(a * (a - 1) for a in u) * sum(a * (a - 1) for a in t), 2 * n * (n - 1))
    return v


def kendall_s(x, y):
    n = len(y)
    return sum(sign(F(x[j]) - F(x[i])) * sign(F(y[j]) - F(y[i]))
               for i in range(n) for j in range(i + 1, n))


def permutation_var(x, y):
    """Exact Var(S) under H0 by enumerating every ordering of y (E[S] = 0)."""
    total = 0
    count = 0
    for perm in itertools.permutations(y):
        total += kendall_s(x, perm) ** 2
        count += 1
    return F(total, count)


def mk(y, ratio=F(1)):
    n = len(y)
    s = mk_s(y)
    var = kendall_var(list(range(n)), y) * ratio
    if var == 0:
        z, p2, pinc = D(0), D(1), D(1)
    else:
        sd = _dec(var).sqrt()
        z = D(s - 1) / sd if s > 0 else D(s + 1) / sd if s < 0 else D(0)
        p2 = 2 * norm_sf(abs(z))
        pinc = norm_sf(D(s - 1) / sd)
    return dict(s=s, var_s=var, z=z, p_two_sided=p2, p_increasing=pinc, n=n,
                tau=F(s) / F(n * (n - 1), 2))


# ----------------------------------------------------------------- Theil-Sen

def exact_median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def theil_sen(x, y, conf):
    n = len(y)
    slopes = sorted((F(y[j]) - F(y[i])) / (F(x[j]) - F(x[i]))
                    for i in range(n) for j in range(i + 1, n) if x[i] != x[j])
    N = len(slopes)
    slope = exact_median(slopes)
    intercept = exact_median([F(y[i]) - slope * F(x[i]) for i in range(n)])
    c = norm_quantile(F(1) / 2 + F(conf) / 2) * _dec(kendall_var(x, y)).sqrt()
    m1 = (D(N) - c) / 2
    k = int(m1.to_integral_value(rounding="ROUND_FLOOR"))
    # The C code floors a double: make sure no rank sits on a knife edge.
    assert abs(m1 - k) > D("1e-6") and abs(m1 - k - 1) > D("1e-6"), m1
    lo, hi = (slopes[k - 1], slopes[N - k]) if k >= 1 else (-math.inf, math.inf)
    return dict(slope=slope, intercept=intercept, lo=lo, hi=hi, n_pairs=N, m1=m1,
                var_s=kendall_var(x, y))


# ------------------------------------------------ effective sample size ratio

def midranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [None] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = F(i + 1 + j + 1, 2)
        i = j + 1
    return r


def ess_ratio(x, y, lag_alpha=0.05, max_lag=0, weights="cubic", use_ranks=False,
              clamp=True):
    """n/n* of Hamed & Rao (1998) ("cubic") or Yue & Wang (2004) ("linear")
    from the lag autocorrelations of the Theil-Sen residuals."""
    n = len(y)
    slope = theil_sen(x, y, 0.5)["slope"]
    e = [F(y[i]) - slope * F(x[i]) for i in range(n)]
    if use_ranks:
        e = midranks(e)
    mean = sum(e) / n
    d = [a - mean for a in e]
    c0 = sum(a * a for a in d)
    if c0 == 0:
        return F(1), None
    L = n - 1 if max_lag <= 0 or max_lag >= n else max_lag
    thr = norm_quantile(1 - F(lag_alpha) / 2) / D(n).sqrt() if lag_alpha > 0 else None
    margin = None
    total = F(0)
    for k in range(1, L + 1):
        r = sum(d[i] * d[i + k] for i in range(n - k)) / c0
        if thr is not None:
            gap = abs(abs(_dec(r)) - thr)
            margin = gap if margin is None else min(margin, gap)
            if not abs(_dec(r)) > thr:
                continue
        if weights == "linear":
            total += (1 - F(k, n)) * r
        else:
            total += (n - k) * (n - k - 1) * (n - k - 2) * r
    q = 1 + 2 * total if weights == "linear" else 1 + 2 * total / (n * (n - 1) * (n - 2))
    if clamp and q < 1:
        q = F(1)
    if q < F(1, n):
        q = F(1, n)
    # The C code decides lag by lag in doubles; keep every decision far from
    # the threshold compared with double rounding.
    assert margin is None or margin > D("1e-9"), margin
    return q, margin


# ------------------------------------------------------------ least squares

def solve(a, b):
    """Gauss-Jordan elimination over the rationals."""
    m = len(b)
    a = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(m):
        piv = next(r for r in range(col, m) if a[r][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        for r in range(m):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [vr - f * vc for vr, vc in zip(a[r], a[col])]
    return [a[i][m] / a[i][i] for i in range(m)]


def inverse(a):
    m = len(a)
    cols = [solve(a, [F(int(i == j)) for i in range(m)]) for j in range(m)]
    return [[cols[j][i] for j in range(m)] for i in range(m)]


def ols_poly(x, y, degree):
    x = [F(v) for v in x]
    y = [F(v) for v in y]
    n = len(x)
    p = degree + 1
    X = [[xi ** k for k in range(p)] for xi in x]
    xtx = [[sum(X[i][a] * X[i][b] for i in range(n)) for b in range(p)] for a in range(p)]
    xty = [sum(X[i][a] * y[i] for i in range(n)) for a in range(p)]
    beta = solve(xtx, xty)
    rss = sum((y[i] - sum(beta[k] * X[i][k] for k in range(p))) ** 2 for i in range(n))
    return beta, rss, inverse(xtx), n - p


def quad_fit(x, y):
    beta, rss, inv, dof = ols_poly(x, y, 2)
    s2 = rss / dof
    return dict(a=beta[0], b=beta[1], c=beta[2], se_c=_dec(s2 * inv[2][2]).sqrt(),
                resid_sd=_dec(s2).sqrt())


def linear_fit(x, y):
    beta, rss, _, dof = ols_poly(x, y, 1)
    yb = sum(F(v) for v in y) / len(y)
    sst = sum((F(v) - yb) ** 2 for v in y)
    return dict(slope=beta[1], intercept=beta[0], resid_sd=_dec(rss / dof).sqrt(),
                r2=(1 - rss / sst) if sst else F(0))


# ----------------------------------------------------------------- data sets

class Lcg:
    """Knuth's MMIX LCG; the C test runs the same integer recurrence."""

    def __init__(self, seed):
        self.s = seed & (2 ** 64 - 1)

    def next(self):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) % 2 ** 64
        return self.s >> 33  # 31 bits

    def uniform_int(self, lo, hi):  # inclusive; the C side uses the same formula
        return lo + self.next() % (hi - lo + 1)


# Little (College of the Holy Cross), "A Mann-Kendall example (by hand)",
# mathcs.holycross.edu/~little/Montserrat/MannKendallByHand.txt.
HOLYCROSS = [12.9, 14.8, 13.2, 15.7, 13.8, 15.6, 12.9, 11.0, 17.3, 15.9, 19.0, 18.3, 20.1, 21.7]
# EPA QA/G-9S (2006), "Data Quality Assessment: Statistical Methods for
# Practitioners", Mann-Kendall example p. 109, as quoted with its results in
# EarthSoft's EnviroInsite "Mann Kendall Trend Evaluation" documentation.
EPA_G9S = [10, 10, 10, 5, 10, 20, 18, 17, 15, 24, 15]
RISING8 = [1, 2, 3, 4, 5, 6, 7, 8]
FALLING_TIES = [5, 5, 4, 4, 4, 3, 6, 2, 1, 1]
# Sen (1968), JASA 63:1379-1389, worked example, as used in SciPy's
# test_theilslopes: slope 4, 93% interval [3.71, 4.38].
SEN_X = [1, 2, 3, 4, 10, 12, 18]
SEN_Y = [9, 15, 19, 20, 45, 55, 78]


def noisy_ties(n=60, seed=11):
    g = Lcg(seed)
    return [g.uniform_int(0, 6) + t // 10 for t in range(n)]


def outlier_series():
    x = list(range(30))
    y = [100 + 5 * t for t in x]
    y[7] += 1000000
    y[19] -= 500000
    y[25] += 2000000
    return x, y


def ties_in_x():
    x = [1, 1, 2, 3, 3, 3, 4, 5, 6, 6, 7, 8]
    y = [3, 5, 4, 8, 6, 9, 9, 12, 10, 14, 15, 15]
    return x, y


def ties_in_x_and_y():
    """Chosen so that Kendall's cross terms (ties in both variables) move
    Sen's lower rank: floor(M1) is 1 with them and 2 without."""
    return [2, 2, 2, 2, 2, 3, 4, 4], [4, 4, 7, 6, 6, 6, 11, 10]


def noisy_line(n=40, seed=5):
    g = Lcg(seed)
    x = list(range(n))
    return x, [1000 + 7 * t + g.uniform_int(-40, 40) for t in x]


def ar1_series(n=120, rho=0.7, seed=2024):
    """Floors like the detector sees: 4 GB base, 50 B/step growth, AR(1) noise."""
    g = Lcg(seed)
    e = 0.0
    y = []
    for t in range(n):
        e = rho * e + g.uniform_int(-1000, 1000)
        y.append(4000000000 + 50 * t + round(e))
    return y


def white_series(n=120, seed=7):
    g = Lcg(seed)
    return [4000000000 + 50 * t + g.uniform_int(-1000, 1000) for t in range(n)]


def quad_noisy(n=40, seed=9):
    g = Lcg(seed)
    x = list(range(n))
    return x, [F(1000) + 30 * t - F(2, 5) * t * t + g.uniform_int(-50, 50) for t in x]


def quad_far():
    """x near 1e6 (x^2 ~ 1e12); y integral and exactly quadratic in x:
    y = 4e9 + 512 (x - 1e6) - 3 ((x - 1e6)/1000)^2."""
    x = [1000000 + 1000 * k for k in range(50)]
    y = [4000000000 + 512 * 1000 * k - 3 * k * k for k in range(50)]
    return x, y


# ----------------------------------------------------- published examples

def check_published():
    # Holy Cross: "S = 54", "V = (14)(13)(33)/18 - (2)(1)(9)/18",
    # "Z = (S - 1)/sqrt(V) = 2.9058", "p = .0018".
    r = mk(HOLYCROSS)
    assert r["s"] == 54
    assert r["var_s"] == F(14 * 13 * 33, 18) - F(2 * 1 * 9, 18)
    assert round(float(r["z"]), 4) == 2.9058
    assert round(float(r["p_increasing"]), 4) == 0.0018
    # EPA QA/G-9S: "S = 22", "var_s = 155.33", "Z = 1.685"; two tie groups
    # of sizes 4 and 2.
    r = mk(EPA_G9S)
    assert r["s"] == 22
    assert round(float(r["var_s"]), 2) == 155.33
    assert round(float(r["z"]), 3) == 1.685
    assert sorted(tie_groups(EPA_G9S)) == [2, 4]
    # growth-detection.md: "8 strictly rising points already give p ~ 4e-4".
    assert round(float(mk(RISING8)["p_increasing"]), 4) == 0.0004
    # Sen (1968): slope 4, interval [3.71, 4.38] at 93%.
    t = theil_sen(SEN_X, SEN_Y, 0.93)
    assert t["slope"] == 4
    assert round(float(t["lo"]), 2) == 3.71 and round(float(t["hi"]), 2) == 4.38
    # Textbook normal quantiles.
    assert str(norm_cdf(D("1.96")))[:18] == "0.9750021048517795"
    assert str(norm_quantile(F(975, 1000)))[:17] == "1.959963984540054"
    # Kendall's tie-corrected Var(S) is the exact permutation variance.
    for x, y in [(list(range(7)), [1, 1, 2, 3, 3, 3, 4]),
                 (list(range(6)), [2, 2, 2, 2, 5, 5]),
                 ([1, 1, 2, 3, 3, 4], [1, 2, 2, 3, 4, 4]),
                 ([0, 0, 0, 1, 1, 2, 3], [5, 1, 1, 2, 2, 2, 9]),
                 ties_in_x_and_y()]:
        assert kendall_var(x, y) == permutation_var(x, y), (x, y)


# ------------------------------------------------------------------ output

def c_num(v):
    if isinstance(v, (F, D)):
        v = float(v)
    if isinstance(v, int):
        return str(v)
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    r = repr(float(v))
    return r if ("." in r or "e" in r) else r + ".0"


def c_array(name, values):
    body = ", ".join(c_num(F(v)) for v in values)
    return f"static const double {name}[] = {{{body}}};"


def c_struct(ctype, name, d, fields):
    body = ", ".join(f".{f} = {c_num(d[f])}" for f in fields)
    return f"static const {ctype} {name} = {{{body}}};"


MK_FIELDS = ["s", "var_s", "z", "p_two_sided", "p_increasing", "n", "tau"]
TS_FIELDS = ["slope", "intercept", "lo", "hi", "n_pairs", "var_s"]


def generate():
    out = []
    w = out.append

    w("/* Mann-Kendall */")
    for name, y in [("HOLYCROSS", HOLYCROSS), ("EPA_G9S", EPA_G9S), ("RISING8", RISING8),
                    ("FALLING_TIES", FALLING_TIES), ("NOISY_TIES", noisy_ties())]:
        w(c_array(f"MK_{name}_Y", y))
        w(c_struct("lw_mk_result", f"MK_{name}_REF", mk(y), MK_FIELDS))
    g = Lcg(99)
    big = [g.uniform_int(0, 499) + t // 8 for t in range(2048)]
    r = mk(big)
    w(f"/* n = 2048, y[t] = lcg(99) % 500 + t/8 */")
    w(c_struct("lw_mk_result", "MK_BIG_REF", r, MK_FIELDS))

    w("/* Theil-Sen (lo/hi by Sen's ranks floor(M1) and N+1-floor(M1)) */")
    cases = [("SEN", SEN_X, SEN_Y, 0.93), ("OUTLIER", *outlier_series(), 0.95),
             ("XTIES", *ties_in_x(), 0.90), ("XYTIES", *ties_in_x_and_y(), 0.95),
             ("NOISY", *noisy_line(), 0.95),
             ("TINY", [0, 1, 2], [0, 1, 5], 0.95)]
    for name, x, y, conf in cases:
        t = theil_sen(x, y, conf)
        w(c_array(f"TS_{name}_X", x))
        w(c_array(f"TS_{name}_Y", y))
        w(f"#define TS_{name}_CONF {c_num(conf)} /* M1 = {float(t['m1']):.6f} */")
        w(c_struct("lw_theil_sen_result", f"TS_{name}_REF", t, TS_FIELDS))
    # Large n: a float sort of every slope, compared with the C quickselect.
    g = Lcg(4242)
    bx = list(range(2048))
    by = [g.uniform_int(0, 99999) + 37 * t for t in bx]
    slopes = sorted((by[j] - by[i]) / (j - i) for i in range(2048) for j in range(i + 1, 2048))
    N = len(slopes)
    med = (slopes[N // 2 - 1] + slopes[N // 2]) / 2
    c = float(norm_quantile(F(975, 1000))) * math.sqrt(float(kendall_var(bx, by)))
    k = math.floor((N - c) / 2)
    assert abs((N - c) / 2 - k) > 1e-6
    icpt = sorted(by[i] - med * bx[i] for i in range(2048))
    w("/* n = 2048, x = t, y = lcg(4242) % 100000 + 37 t, conf 0.95 */")
    w(c_struct("lw_theil_sen_result", "TS_BIG_REF",
               dict(slope=med, intercept=(icpt[1023] + icpt[1024]) / 2, lo=slopes[k - 1],
                    hi=slopes[N - k], n_pairs=N, var_s=kendall_var(bx, by)), TS_FIELDS))

    w("/* Effective-sample-size correction */")
    ar = ar1_series()
    wn = white_series()
    x = list(range(len(ar)))
    w(c_array("ESS_AR1_Y", ar))
    w(c_array("ESS_WHITE_Y", wn))
    variants = [("AR1", ar, {}), ("WHITE", wn, {}),
                ("AR1_ALL_LAGS", ar, dict(lag_alpha=0)),
                ("AR1_LINEAR", ar, dict(weights="linear")),
                ("AR1_LINEAR_ALL_UNCLAMPED", ar, dict(weights="linear", lag_alpha=0, clamp=False)),
                ("AR1_RANKS", ar, dict(use_ranks=True)),
                ("AR1_MAXLAG3", ar, dict(max_lag=3)),
                ("WHITE_ALL_UNCLAMPED", wn, dict(lag_alpha=0, clamp=False)),
                ("WHITE_ALL_CLAMPED", wn, dict(lag_alpha=0)),
                # MK_NOISY_TIES_Y: tied residuals, so mid-ranks matter.
                ("TIES_RANKS_ALL_UNCLAMPED", noisy_ties(),
                 dict(use_ranks=True, lag_alpha=0, clamp=False))]
    for name, y, kw in variants:
        q, margin = ess_ratio(list(range(len(y))), y, **kw)
        m = "" if margin is None else f" /* closest |r_k| to threshold: {float(margin):.3g} */"
        w(f"#define ESS_{name}_RATIO {c_num(q)}{m}")
    w(c_struct("lw_mk_result", "ESS_AR1_MK_REF", mk(ar, ess_ratio(x, ar)[0]), MK_FIELDS))

    w("/* Least squares */")
    for name, (x, y) in [("QUAD_EXACT", (list(range(20)), [7 - 3 * t + F(1, 4) * t * t
                                                          for t in range(20)])),
                         ("QUAD_FAR", quad_far()), ("QUAD_NOISY", quad_noisy())]:
        w(c_array(f"{name}_X", x))
        w(c_array(f"{name}_Y", y))
        w(c_struct("lw_quad_fit", f"{name}_REF", quad_fit(x, y),
                   ["a", "b", "c", "se_c", "resid_sd"]))
    x, y = noisy_line(40, 77)
    w(c_array("LIN_NOISY_X", x))
    w(c_array("LIN_NOISY_Y", y))
    w(c_struct("lw_linear_fit", "LIN_NOISY_REF", linear_fit(x, y),
               ["slope", "intercept", "resid_sd", "r2"]))

    w("/* Normal distribution: {z, Phi(z)} and {p, Phi^-1(p)} */")
    zs = ["0", "1", "-1", "1.96", "-1.96", "3", "-5", "-10", "6.5", "-37"]
    w("static const double NORM_CDF[][2] = {"
      + ", ".join(f"{{{z}, {c_num(norm_cdf(D(z)))}}}" for z in zs) + "};")
    ps = [F(1, 2), F(975, 1000), F(25, 1000), F(9, 10), F(999, 1000), F(1, 10 ** 10),
          F(1, 10 ** 6), F(3, 100), F(1, 10 ** 300)]
    w("static const double NORM_QUANTILE[][2] = {"
      + ", ".join(f"{{{c_num(p)}, {c_num(norm_quantile(F(float(p))))}}}" for p in ps) + "};")
    return "\n".join(out)


BEGIN = "/* BEGIN GENERATED by tests/unit/reference/stats_reference.py */"
END = "/* END GENERATED */"


def main():
    check_published()
    block = generate()
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        text = open(sys.argv[2]).read()
        inside = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
        if inside != block.strip():
            print("generated block differs from " + sys.argv[2], file=sys.stderr)
            return 1
        print("reference block matches")
        return 0
    print(BEGIN)
    print(block)
    print(END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
