/* SPDX-License-Identifier: Apache-2.0 */
/* Several reports of one job (one per rank) read as one: the verdict per rank,
 * leaking ranks first, and the places that leak grouped across ranks, so that
 * eight ranks leaking at the same line read as one line, not eight reports. */
#include "merge.h"

#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const lw_model *order_ms; /* qsort has no context argument in C11 */

static int by_leak_then_rank(const void *a, const void *b) {
    const lw_model *x = &order_ms[*(const size_t *)a], *y = &order_ms[*(const size_t *)b];
    int lx = x->verdict == LW_MV_LEAK, ly = y->verdict == LW_MV_LEAK;
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
        /* The site the rank's answer names, at the answer's rate: for a
         * PyTorch leak that is the tensors' growth, not the rate of the
         * history site that names the line (a few bytes a step), so this
         * line and the rank's row say the same. */
        const lw_m_site *top = m->verdict == LW_MV_LEAK ? lw_model_top_site(m) : NULL;
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
