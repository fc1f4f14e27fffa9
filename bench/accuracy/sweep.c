/* SPDX-License-Identifier: Apache-2.0 */
/* The detector under a noisy floor, offline: a sweep of synthetic floor
 * series fed straight into the series and the decision code the shim runs
 * (series.c, detector.c: the same bins, the same evaluation schedule, the
 * same confirmation), without a shim, a device or a training loop, so
 * thousands of steps of dozens of runs fit in seconds on one core.
 *
 * The floor of step s is
 *     F(s) = 4 GiB + leak * s + pattern(s) + U(s),   U(s) ~ uniform [0, J)
 * with J = 64 MiB: a prefetch buffer of random size held across each step
 * boundary (a data loader's pinned staging buffer, variable sequence
 * lengths), whose sd is J / sqrt(12) = 18.5 MiB. Cells:
 *   leak 1/R   a steady leak of J/R bytes per step from step 0
 *   clean      the noise alone
 *   warmup     A (1 - e^(-s/tau)): a warm-up ending inside the noise
 *   sawtooth   a cache growing to S over P steps, then freed, repeatedly
 *   saw+leak   a sawtooth with a leak under it
 * For each cell and seed the verdict is read at each run length (the
 * detector is causal, so the verdict at step L of a long run is the verdict
 * of a run of L steps: the state is copied and the final evaluation a report
 * makes is run on the copy), with the steps from the onset to the first
 * leak verdict, leak verdicts withdrawn, and the rate's error. "ideal" is
 * the step at which an ordinary least-squares slope on the unbinned floors
 * since the onset, with the noise's sd known, first reaches the detector's
 * own significance level; "p<1e-6 missed" counts run lengths at which that
 * ideal test reaches p < 1e-6 but the verdict is not leak.
 *
 *   sweep [--seeds N] [--only SUBSTRING] [--dump CELL:SEED:STEP] [--replay FILE]
 *         [--trace] [-v]
 *
 * --replay runs the detector on a recorded floor series instead (one floor
 * per line, or "step floor ..." as rt_workload --trace writes); --trace
 * prints the evaluations that are not leak verdicts and every change of the
 * announced verdict.
 * --dump prints the bins the detector sees at that step (x t floor n), as
 * stored in tests/unit/data/. Always exits 0 unless the arguments are bad:
 * a benchmark prints numbers, it does not judge them. */
#include "detector.h"
#include "series.h"
#include "stats.h"
#include "tracked.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * MiB)
#define J (64 * MiB)
#define BINS 256
#define CONFIRM 3
#define MAX_SEEDS 32

static const long lengths[] = {1000, 2000, 5000, 10000, 20000, 50000};
#define NLEN ((int)(sizeof lengths / sizeof lengths[0]))

typedef enum { K_LEAK, K_CLEAN, K_WARMUP, K_SAW, K_SAWLEAK } kind;

typedef struct {
    const char *name;
    kind k;
    double leak; /* bytes per step */
    double a, b; /* warm-up: size, tau; sawtooth: size, period */
    long steps;
} cell;

static const cell cells[] = {
    {"leak 1/64", K_LEAK, J / 64, 0, 0, 50000},
    {"leak 1/256", K_LEAK, J / 256, 0, 0, 50000},
    {"leak 1/1024", K_LEAK, J / 1024, 0, 0, 50000},
    {"leak 1/4096", K_LEAK, J / 4096, 0, 0, 50000},
    {"leak 1/8192", K_LEAK, J / 8192, 0, 0, 50000},
    {"clean", K_CLEAN, 0, 0, 0, 50000},
    {"warmup J tau300", K_WARMUP, 0, J, 300, 20000},
    {"warmup J tau3000", K_WARMUP, 0, J, 3000, 20000},
    {"warmup 4J tau300", K_WARMUP, 0, 4 * J, 300, 20000},
    {"warmup 4J tau3000", K_WARMUP, 0, 4 * J, 3000, 20000},
    {"sawtooth J p64", K_SAW, 0, J, 64, 20000},
    {"sawtooth J p1000", K_SAW, 0, J, 1000, 20000},
    {"sawtooth 8J p64", K_SAW, 0, 8 * J, 64, 20000},
    {"sawtooth 8J p1000", K_SAW, 0, 8 * J, 1000, 20000},
    {"saw 8J p64+leak 1/256", K_SAWLEAK, J / 256, 8 * J, 64, 20000},
};
#define NCELLS ((int)(sizeof cells / sizeof cells[0]))

/* ---- deterministic noise ---- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) {
    return ((splitmix(s) >> 11) + 0.5) / 9007199254740992.0;
}

static double floor_at(const cell *c, long s, uint64_t *rng) {
    double f = 4 * GiB + c->leak * (double)s + J * uniform01(rng);
    if (c->k == K_WARMUP) f += c->a * (1 - exp(-(double)s / c->b));
    if (c->k == K_SAW || c->k == K_SAWLEAK) f += c->a * (double)(s % (long)c->b) / c->b;
    /* Floors are whole bytes, as the shim sees them. */
    return floor(f);
}

/* ---- one run: the shim's evaluation schedule and decision ---- */

typedef struct {
    lw_series series;
    lw_bin storage[BINS];
    lw_decision d;
    lw_growth last;
    double last_x;
    uint64_t next_eval, rest_until;
} sim;

static void sim_init(sim *m) {
    memset(m, 0, sizeof *m);
    lw_series_init(&m->series, m->storage, BINS);
    lw_decision_init(&m->d);
}

static int trace;

static void evaluate(sim *m) {
    lw_bin bins[BINS + 1];
    int n = lw_series_get(&m->series, bins, BINS + 1);
    lw_detect_params p = lw_detect_defaults();
    lw_detect(bins, n, &p, &m->last);
    lw_verdict before = m->d.announced;
    lw_decision_update(&m->d, &m->last, m->series.points, m->last_x, CONFIRM);
    if (trace && (before != m->d.announced || m->last.verdict != LW_VERDICT_LEAK))
        printf("  trace %llu: n=%d window %d raw %s announced %s p %.2g recent %.2g guard %s "
               "%.2g slope %.0f [%.0f, %.0f]: %s\n",
               (unsigned long long)m->series.points, n, m->last.window,
               lw_verdict_name(m->last.verdict), lw_verdict_name(m->d.announced), m->last.p_value,
               m->last.p_recent, m->last.overruled_by ? m->last.overruled_by : "-", m->last.guard_p,
               m->last.slope, m->last.lo, m->last.hi, m->d.reason);
}

/* As the sampler does (tracked.c): every point early on, then every 1/32
 * of the points, every 1/LW_TRACKED_REST_PART while the series is at rest
 * (no leak, no trend at all). */
static void add_point(sim *m, double x, double y) {
    lw_series_add(&m->series, x, x * 0.1, y, y);
    m->last_x = x;
    if (m->series.points >= m->next_eval) {
        uint64_t points = m->series.points, gap = points / 32;
        m->next_eval = points + (gap ? gap : 1);
        if (points < m->rest_until) return;
        evaluate(m);
        m->rest_until = points >= 32 && m->last.verdict == LW_VERDICT_NO_LEAK &&
                                m->d.announced == LW_VERDICT_NO_LEAK &&
                                m->last.p_value >= lw_detect_defaults().alpha_keep
                            ? points + points / LW_TRACKED_REST_PART
                            : 0;
    }
}

typedef struct {
    char verdict[NLEN]; /* L, n, i; 0: run shorter */
    double rate[NLEN];  /* announced leak's rate, else NAN */
    double lo[NLEN], hi[NLEN];
    double ideal_p[NLEN];
    double min_rate[NLEN], more[NLEN], noise[NLEN];
    const char *guard[NLEN];
    double first_leak; /* step; NAN: never */
    double ideal_steps;
    uint64_t withdrawn;
} run_result;

static double upper_p(double z) {
    return 0.5 * erfc(z / M_SQRT2);
}

static void run(const cell *c, int seed, run_result *r, long dump_step) {
    static sim m, copy;
    sim_init(&m);
    uint64_t rng = 0x1234567ull * (uint64_t)(c - cells + 1) + (uint64_t)seed * 0x9e3779b97ull;
    memset(r, 0, sizeof *r);
    r->first_leak = r->ideal_steps = NAN;
    /* The known noise: the buffer's, and a sawtooth's own spread. */
    double saw = c->k == K_SAW || c->k == K_SAWLEAK ? c->a : 0;
    double sigma = sqrt(J * J + saw * saw) / sqrt(12.0);
    double za = lw_normal_quantile(1 - lw_detect_defaults().alpha);
    /* The ideal test's running sums, about the first floor (precision). */
    double sx = 0, sy = 0, sxx = 0, sxy = 0, y0 = 0;
    int li = 0;
    for (long s = 0; s < c->steps; s++) {
        double y = floor_at(c, s, &rng);
        if (s == 0) y0 = y;
        add_point(&m, (double)s, y);
        double dy = y - y0, k = (double)(s + 1);
        sx += (double)s, sy += dy, sxx += (double)s * s, sxy += (double)s * dy;
        double cxx = sxx - sx * sx / k, b = cxx > 0 ? (sxy - sx * sy / k) / cxx : 0;
        double z = cxx > 0 ? b * sqrt(cxx) / sigma : 0;
        if (isnan(r->ideal_steps) && c->leak > 0 && z >= za) r->ideal_steps = (double)s;
        if (m.d.announced == LW_VERDICT_LEAK && isnan(r->first_leak))
            r->first_leak = m.d.first_leak_x;
        if (s + 1 == dump_step) {
            lw_bin bins[BINS + 1];
            int n = lw_series_get(&m.series, bins, BINS + 1);
            printf("# %s seed %d, bins after %ld steps: x t floor n\n", c->name, seed, dump_step);
            for (int i = 0; i < n; i++)
                printf("%.17g %.17g %.17g %u\n", bins[i].x, bins[i].t, bins[i].floor, bins[i].n);
            return;
        }
        if (li < NLEN && s + 1 == lengths[li]) {
            /* The report a run of this length would write: one more
             * evaluation on what has not been evaluated yet. */
            copy = m;
            copy.series.bins = copy.storage;
            if (copy.series.points != copy.next_eval) evaluate(&copy);
            lw_verdict v = copy.d.announced;
            r->verdict[li] = v == LW_VERDICT_LEAK ? 'L' : v == LW_VERDICT_NO_LEAK ? 'n' : 'i';
            r->rate[li] = v == LW_VERDICT_LEAK ? copy.last.slope : NAN;
            r->lo[li] = copy.last.lo;
            r->hi[li] = copy.last.hi;
            r->ideal_p[li] = upper_p(z);
            r->min_rate[li] = copy.last.min_rate;
            r->more[li] = copy.last.more_steps;
            r->noise[li] = copy.last.noise_step;
            r->guard[li] = copy.last.overruled_by;
            li++;
        }
    }
    r->withdrawn = m.d.withdrawn;
}

static double median(double *v, int n) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(v[i])) v[m++] = v[i];
    if (!m) return NAN;
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

static void fmt_bytes(double b, char *out, size_t n) {
    if (isnan(b))
        snprintf(out, n, "-");
    else if (fabs(b) >= MiB)
        snprintf(out, n, "%.3gM", b / MiB);
    else if (fabs(b) >= 1024)
        snprintf(out, n, "%.3gK", b / 1024);
    else
        snprintf(out, n, "%.3g", b);
}

int main(int argc, char **argv) {
    int seeds = 10, verbose = 0;
    const char *only = NULL, *dump = NULL, *replay = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--replay") && i + 1 < argc)
            replay = argv[++i];
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--trace"))
            trace = 1;
        else {
            fprintf(stderr,
                    "sweep: unknown argument '%s'\nusage: sweep [--seeds N] [--only SUBSTRING] "
                    "[--dump CELL:SEED:STEP] [--replay FILE] [--trace] [-v]\n",
                    argv[i]);
            return 2;
        }
    }
    if (seeds < 1 || seeds > MAX_SEEDS) {
        fprintf(stderr, "sweep: --seeds takes 1 to %d\n", MAX_SEEDS);
        return 2;
    }
    if (replay) {
        /* A recorded floor series: "floor" or "step floor ..." per line
         * (rt_workload --trace writes the latter). */
        FILE *f = fopen(replay, "r");
        if (!f) {
            fprintf(stderr, "sweep: cannot open '%s'\n", replay);
            return 2;
        }
        static sim m;
        sim_init(&m);
        char line[256];
        long s = 0;
        while (fgets(line, sizeof line, f)) {
            double a, b;
            int k = sscanf(line, "%lf %lf", &a, &b);
            if (k < 1 || line[0] == '#') continue;
            add_point(&m, (double)s++, k >= 2 ? b : a);
        }
        fclose(f);
        if (m.series.points != m.next_eval) evaluate(&m);
        printf("replay %s: %ld steps, verdict %s (%s), withdrawn %llu, first leak %.0f\n", replay,
               s, lw_verdict_name(m.d.announced), m.d.reason, (unsigned long long)m.d.withdrawn,
               m.d.first_leak_x);
        return 0;
    }
    if (dump) {
        char name[64];
        int seed;
        long step;
        const char *colon = strchr(dump, ':');
        if (!colon || colon - dump >= (long)sizeof name ||
            sscanf(colon + 1, "%d:%ld", &seed, &step) != 2) {
            fprintf(stderr, "sweep: --dump takes CELL:SEED:STEP, e.g. 'leak 1/4096:3:8500'\n");
            return 2;
        }
        memcpy(name, dump, (size_t)(colon - dump));
        name[colon - dump] = 0;
        for (int c = 0; c < NCELLS; c++)
            if (!strcmp(cells[c].name, name)) {
                run_result r;
                run(&cells[c], seed, &r, step);
                return 0;
            }
        fprintf(stderr, "sweep: no cell named '%s'\n", name);
        return 2;
    }

    lw_detect_params p = lw_detect_defaults();
    double sd = J / sqrt(12.0), za = lw_normal_quantile(1 - p.alpha);
    printf("noise sweep: floor = 4 GiB + leak*s + pattern + U[0, 64 MiB) (sd %.1f MiB), %d seeds;\n"
           "trend test at alpha %.0e; ideal: OLS on the unbinned floors, sd known, same alpha\n\n",
           sd / MiB, seeds, p.alpha);
    printf("%-22s %-5s", "cell", "rate");
    for (int l = 0; l < NLEN; l++) {
        char h[24];
        snprintf(h, sizeof h, "%ldk", lengths[l] / 1000);
        printf(" %-*s", seeds + 1, h);
    }
    printf(" %5s %4s %7s %6s %5s %5s %5s %3s %4s\n", "err%", "ci%", "to-verd", "ideal", "N*", "x",
           "worst", "wdr", "miss");
    int fp = 0, wd_leak = 0, miss_all = 0, err_cells = 0, slow_cells = 0;
    for (int ci = 0; ci < NCELLS; ci++) {
        const cell *c = &cells[ci];
        if (only && !strstr(c->name, only)) continue;
        run_result rs[MAX_SEEDS];
        for (int s = 0; s < seeds; s++)
            run(c, s + 1, &rs[s], -1);
        int truth = c->leak > 0, steady = c->k == K_LEAK;
        /* A bounded pattern proves itself bounded only with time: a
         * warm-up has ended after 5 time constants (its rate down to
         * e^-5), a sawtooth after two periods. Before that the floor
         * grows, as a leak's would: verdicts there are shown ('*'), not
         * counted as false positives. */
        long proven = c->k == K_WARMUP ? (long)(5 * c->b) : c->k == K_SAW ? (long)(2 * c->b) : 0;
        char rate[16];
        fmt_bytes(c->leak, rate, sizeof rate);
        printf("%-22s %-5s", c->name, truth ? rate : "-");
        double err = NAN, ttv[MAX_SEEDS], ideal[MAX_SEEDS], worst = NAN;
        int miss = 0, in_ci = 0, leak_verdicts = 0;
        uint64_t wd = 0;
        int last_l = 0;
        for (int l = 0; l < NLEN; l++) {
            char col[MAX_SEEDS + 2];
            int k = 0;
            for (int s = 0; s < seeds; s++) {
                if (!rs[s].verdict[l]) continue;
                last_l = l;
                col[k++] = rs[s].verdict[l];
                if (truth && rs[s].verdict[l] == 'L') {
                    leak_verdicts++;
                    in_ci += rs[s].lo[l] <= c->leak && c->leak <= rs[s].hi[l];
                }
                if (truth && rs[s].ideal_p[l] < 1e-6 && rs[s].verdict[l] != 'L') miss++;
                if (!truth && rs[s].verdict[l] == 'L' && lengths[l] >= proven) fp++;
            }
            if (k && lengths[l] < proven) col[k++] = '*';
            col[k] = 0;
            printf(" %-*s", seeds + 1, k ? col : "");
        }
        for (int s = 0; s < seeds; s++) {
            ttv[s] = truth ? rs[s].first_leak : NAN;
            ideal[s] = rs[s].ideal_steps;
            wd += rs[s].withdrawn;
            if (truth && rs[s].verdict[last_l] == 'L') {
                double e = 100 * fabs(rs[s].rate[last_l] - c->leak) / c->leak;
                if (isnan(err) || e > err) err = e;
            }
            double q = rs[s].first_leak / rs[s].ideal_steps;
            if (truth && !isnan(q) && (isnan(worst) || q > worst)) worst = q;
        }
        double mt = median(ttv, seeds), mi = median(ideal, seeds);
        double nstar = truth ? cbrt(12 * pow(za * sd / c->leak, 2)) : NAN;
        char e1[16] = "-", e2[16] = "-", e3[16] = "-", e4[16] = "-", e5[16] = "-", e6[16] = "-",
             e7[16] = "-";
        if (!isnan(err)) snprintf(e1, sizeof e1, "%.1f", err);
        if (leak_verdicts) snprintf(e2, sizeof e2, "%.0f", 100.0 * in_ci / leak_verdicts);
        if (!isnan(mt)) snprintf(e3, sizeof e3, "%.0f", mt);
        if (!isnan(mi) && truth) snprintf(e4, sizeof e4, "%.0f", mi);
        if (!isnan(nstar)) snprintf(e5, sizeof e5, "%.0f", nstar);
        if (!isnan(mt / mi) && truth) snprintf(e6, sizeof e6, "%.2f", mt / mi);
        if (!isnan(worst)) snprintf(e7, sizeof e7, "%.2f", worst);
        printf(" %5s %4s %7s %6s %5s %5s %5s %3llu %4d\n", e1, e2, e3, e4, e5, e6, e7,
               (unsigned long long)wd, miss);
        if (steady) {
            wd_leak += (int)wd;
            miss_all += miss;
            if (err > 10) err_cells++;
            if (mt / mi > 2) slow_cells++;
        }
        if (verbose) {
            for (int s = 0; s < seeds; s++) {
                printf("    seed %d: first leak %.0f, ideal %.0f, withdrawn %llu;", s + 1,
                       rs[s].first_leak, rs[s].ideal_steps, (unsigned long long)rs[s].withdrawn);
                for (int l = 0; l < NLEN; l++) {
                    if (!rs[s].verdict[l]) continue;
                    char nb[16], mr[16];
                    fmt_bytes(rs[s].noise[l], nb, sizeof nb);
                    fmt_bytes(rs[s].min_rate[l], mr, sizeof mr);
                    printf(" %ldk:%c noise %s min %s more %.0f%s%s", lengths[l] / 1000,
                           rs[s].verdict[l], nb, mr, rs[s].more[l], rs[s].guard[l] ? " " : "",
                           rs[s].guard[l] ? rs[s].guard[l] : "");
                }
                printf("\n");
            }
        }
    }
    printf(
        "\n  verdicts at each run length, one letter a seed: L leak, n no_leak, i inconclusive;\n"
        "  '*': the pattern still grows there (warm-up before 5 tau, sawtooth before 2 periods),\n"
        "  not counted as a false positive. err%%: largest rate error at the longest run; ci%%:\n"
        "  leak verdicts whose 95%% interval holds the true rate; to-verd, ideal: median steps\n"
        "  from the onset to the first leak verdict and to the ideal test's first p < alpha on\n"
        "  the same data; N*: the ideal test's expected steps; x: to-verd / ideal; worst: the\n"
        "  slowest seed's ratio; wdr: leak verdicts withdrawn; miss: run lengths at which the\n"
        "  ideal test reaches p < 1e-6 but the verdict is not leak (the saw+leak cell's ideal\n"
        "  treats the sawtooth as white noise, which it is not).\n");
    printf("\nsweep: false positives %d, withdrawn steady leaks %d, steady leaks missed at "
           "p<1e-6 %d, steady cells over 10%% rate error %d, over 2x ideal steps %d\n",
           fp, wd_leak, miss_all, err_cells, slow_cells);
    return 0;
}
