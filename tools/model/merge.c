/* SPDX-License-Identifier: Apache-2.0 */
/* Several reports of one job (one per rank) read as one: the verdict per rank,
 * leaking ranks first, and the places that leak grouped across ranks, so that
 * eight ranks leaking at the same line read as one line, not eight reports.
 * Ordering the ranks is merging: each rank's own answer and site are its
 * report's (lw_model_answer, lw_model_top_site), never chosen again here. */
#include "merge.h"

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const lw_model *order_ms; /* qsort has no context argument in C11 */

static int by_leak_then_rank(const void *a, const void *b) {
    const lw_model *x = &order_ms[*(const size_t *)a], *y = &order_ms[*(const size_t *)b];
    int lx = x->verdict == LW_VERDICT_LEAK, ly = y->verdict == LW_VERDICT_LEAK;
    if (lx != ly) return lx ? -1 : 1;
    int rx = isfinite(x->rank), ry = isfinite(y->rank);
    if (rx != ry) return rx ? -1 : 1;
    if (rx && x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void lw_merge_order(const lw_model *ms, size_t n, size_t *order) {
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    order_ms = ms;
    if (n > 1) qsort(order, n, sizeof *order, by_leak_then_rank);
    order_ms = NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void lw_merge_ranks_text(const lw_model *ms, const size_t *members, size_t k, char *out, size_t n) {
    size_t o = 0;
    out[0] = '\0';
    int all_numeric = 1;
    for (size_t i = 0; i < k; i++)
        all_numeric &= isfinite(ms[members[i]].rank);
    if (!all_numeric) {
        for (size_t i = 0; i < k && o < n; i++) {
            char name[200];
            lw_model_name(&ms[members[i]], name, sizeof name);
            int w = snprintf(out + o, n - o, "%s%s", i ? ", " : "", name);
            if (w < 0) break;
            o += (size_t)w;
        }
        return;
    }
    double *r = malloc(k * sizeof *r);
    if (!r) return;
    for (size_t i = 0; i < k; i++)
        r[i] = ms[members[i]].rank;
    qsort(r, k, sizeof *r, cmp_double);
    int w = snprintf(out, n, "rank%s ", k == 1 ? "" : "s");
    o = w > 0 ? (size_t)w : 0;
    /* Runs of consecutive ranks as "0–7". */
    for (size_t i = 0; i < k && o < n;) {
        size_t j = i;
        while (j + 1 < k && r[j + 1] <= r[j] + 1)
            j++;
        if (r[j] > r[i])
            w = snprintf(out + o, n - o, "%s%.0f\xe2\x80\x93%.0f", i ? ", " : "", r[i], r[j]);
        else
            w = snprintf(out + o, n - o, "%s%.0f", i ? ", " : "", r[i]);
        if (w < 0) break;
        o += (size_t)w;
        i = j + 1;
    }
    free(r);
}

size_t lw_merge_groups(const lw_model *ms, size_t n, lw_merge_group **out) {
    lw_merge_group *g = NULL;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const lw_model *m = &ms[i];
        /* Only a rank whose verdict is a leak leaks somewhere: a site an
         * inconclusive rank flags is not a leak of the job (issue 41). */
        if (m->verdict != LW_VERDICT_LEAK) continue;
        /* The site the rank's answer names, at the answer's rate: for a
         * PyTorch leak that is the tensors' growth, not the rate of the
         * history site that names the line (a few bytes a step), so this
         * line and the rank's row say the same. */
        const lw_m_site *top = m->verdict == LW_VERDICT_LEAK ? lw_model_top_site(m) : NULL;
        double top_rate = NAN;
        if (top) {
            lw_answer a;
            char w[512];
            lw_model_answer(m, &a, w, sizeof w);
            top_rate = a.rate;
        }
        for (size_t k = 0; k < m->nsites; k++) {
            const lw_m_site *s = &m->sites[k];
            /* A leaking site; or, for a rank that leaks with no site flagged,
             * the site its answer names. */
            int named = s == top;
            if (s->leak != 1 && !named) continue;
            char where[512];
            lw_model_where(s, where, sizeof where);
            size_t gi = 0;
            while (gi < ng && strcmp(g[gi].where, where))
                gi++;
            if (gi == ng) {
                lw_merge_group *ng2 = realloc(g, (ng + 1) * sizeof *g);
                if (!ng2) break;
                g = ng2;
                memset(&g[ng], 0, sizeof *g);
                snprintf(g[ng].where, sizeof g[ng].where, "%s", where);
                g[ng].members = calloc(n, sizeof *g[ng].members);
                g[ng].rates = calloc(n, sizeof *g[ng].rates);
                ng++;
            }
            lw_merge_group *grp = &g[gi];
            int already = 0;
            for (size_t q = 0; q < grp->n; q++)
                already |= grp->members[q] == i;
            if (already || !grp->members || !grp->rates) continue;
            grp->members[grp->n] = i;
            grp->rates[grp->n++] = named && isfinite(top_rate) ? top_rate : s->bytes_per_step;
        }
    }
    *out = g;
    return ng;
}

void lw_merge_free(lw_merge_group *g, size_t ng) {
    for (size_t i = 0; i < ng; i++)
        free(g[i].members), free(g[i].rates);
    free(g);
}

void lw_merge_group_line(const lw_model *ms, const lw_merge_group *g, char *out, size_t n) {
    char ranks[600], a[64], b[64];
    lw_merge_ranks_text(ms, g->members, g->n, ranks, sizeof ranks);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < g->n; i++)
        if (isfinite(g->rates[i])) lo = fmin(lo, g->rates[i]), hi = fmax(hi, g->rates[i]);
    const char *unit = "step";
    if (!isfinite(lo)) {
        snprintf(out, n, "%s leaks on %s", g->where, ranks);
        return;
    }
    lw_fmt_rate(lo, unit, a, sizeof a);
    lw_fmt_rate(hi, unit, b, sizeof b);
    if (!strcmp(a, b))
        snprintf(out, n, "%s leaks on %s, %s%s", g->where, ranks, a, g->n > 1 ? " each" : "");
    else
        snprintf(out, n, "%s leaks on %s, %s to %s", g->where, ranks, a, b);
}

/* The rates of the reports that do not leak, finite ones only; *k of them. */
static double *others_rates(const lw_model *ms, size_t n, size_t *k) {
    double *r = malloc((n ? n : 1) * sizeof *r);
    *k = 0;
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++)
        if (ms[i].verdict != LW_VERDICT_LEAK && isfinite(ms[i].growth.bytes_per_step))
            r[(*k)++] = ms[i].growth.bytes_per_step;
    qsort(r, *k, sizeof *r, cmp_double);
    return r;
}

int lw_merge_skew(const lw_model *ms, size_t n, char *out, size_t len) {
    out[0] = '\0';
    size_t leaking = 0, lead = n;
    for (size_t i = 0; i < n; i++)
        if (ms[i].verdict == LW_VERDICT_LEAK) {
            leaking++;
            if (lead == n || ms[i].growth.bytes_per_step > ms[lead].growth.bytes_per_step) lead = i;
        }
    if (!leaking || leaking == n) return 0;
    size_t k = 0;
    double *r = others_rates(ms, n, &k);
    if (!r) return 0;
    char who[200], a[64], med[64], hi[64];
    size_t lead_i = lead;
    lw_merge_ranks_text(ms, &lead_i, 1, who, sizeof who);
    lw_fmt_rate(ms[lead].growth.bytes_per_step, "step", a, sizeof a);
    size_t others = n - leaking;
    /* "rank" when every other report has one, else "report". */
    const char *noun = "rank";
    for (size_t i = 0; i < n; i++)
        if (ms[i].verdict != LW_VERDICT_LEAK && !isfinite(ms[i].rank)) noun = "report";
    if (k == 1 && others == 1) {
        lw_fmt_rate(r[0], "step", med, sizeof med);
        snprintf(out, len, "skew: %s grows %s; the other %s, which does not leak: %s", who, a, noun,
                 med);
    } else if (k) {
        lw_fmt_rate(r[k / 2], "step", med, sizeof med);
        lw_fmt_rate(r[k - 1], "step", hi, sizeof hi);
        snprintf(out, len,
                 "skew: %s grows %s; the %zu other %ss, which do not leak: median %s, "
                 "highest %s",
                 who, a, others, noun, med, hi);
    } else {
        snprintf(out, len, "skew: %s grows %s; the %zu other %s%s do%s not leak", who, a, others,
                 noun, others == 1 ? "" : "s", others == 1 ? "es" : "");
    }
    free(r);
    return 1;
}

int lw_merge_headline(const lw_model *ms, size_t n, char *out, size_t len) {
    size_t leaking = 0, undecided = 0;
    for (size_t i = 0; i < n; i++) {
        leaking += ms[i].verdict == LW_VERDICT_LEAK;
        undecided += ms[i].verdict == LW_VERDICT_INCONCLUSIVE;
    }
    lw_merge_group *g = NULL;
    size_t ng = lw_merge_groups(ms, n, &g);
    char line[1200];
    if (ng) {
        lw_merge_group_line(ms, &g[0], line, sizeof line);
        snprintf(out, len, "LEAK: %s (%zu of %zu reports leak)", line, leaking, n);
    } else if (leaking) {
        snprintf(out, len, "LEAK in %zu of %zu reports", leaking, n);
    } else if (undecided) {
        /* Nothing called: said as such, with the ranks still undecided. */
        size_t *who = malloc(undecided * sizeof *who), k = 0;
        char ranks[600] = "";
        if (who) {
            for (size_t i = 0; i < n; i++)
                if (ms[i].verdict == LW_VERDICT_INCONCLUSIVE) who[k++] = i;
            lw_merge_ranks_text(ms, who, k, ranks, sizeof ranks);
            free(who);
        }
        snprintf(out, len,
                 "inconclusive: no leak called in %zu reports; undecided on %s (%zu of %zu)", n,
                 ranks[0] ? ranks : "some", undecided, n);
    } else {
        snprintf(out, len, "no leak in any of %zu reports", n);
    }
    lw_merge_free(g, ng);
    return leaking ? 1 : undecided ? 2 : 0;
}
