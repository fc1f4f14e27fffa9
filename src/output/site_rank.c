/* SPDX-License-Identifier: Apache-2.0 */
/* The order of the call sites (site_rank.h). */
#include "site_rank.h"

#include "options.h"
#include "torch_info.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static void copy_view(lw_site *s, const lw_site_track *t, void *arg) {
    lw_site_views *vs = arg;
    if (!t->evaluated || t->growth.verdict != LW_VERDICT_LEAK) return;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 16;
        lw_site_view *v = realloc(vs->v, cap * sizeof *v);
        if (!v) return;
        vs->v = v, vs->cap = cap;
    }
    lw_site_view *v = &vs->v[vs->n++];
    v->site = s;
    v->growth = t->growth;
    v->nbins = lw_series_get(&t->series, v->bins, LW_SITE_BINS + 1);
}

static int by_site(const void *a, const void *b) {
    const lw_site *x = ((const lw_site_view *)a)->site, *y = ((const lw_site_view *)b)->site;
    return x < y ? -1 : x > y;
}

void lw_site_views_load(lw_site_views *vs, int global_leak) {
    memset(vs, 0, sizeof *vs);
    if (!global_leak) return;
    lw_growth_each_site(copy_view, vs);
    if (vs->n) qsort(vs->v, vs->n, sizeof *vs->v, by_site);
}

const lw_site_view *lw_site_view_of(const lw_site_views *vs, const lw_site *s) {
    lw_site_view key = {.site = s};
    return vs->n ? bsearch(&key, vs->v, vs->n, sizeof *vs->v, by_site) : NULL;
}

void lw_site_views_free(lw_site_views *vs) {
    free(vs->v);
}

/* Leaking sites first, fastest growth first; then by what they hold. */
static int by_relevance(const void *a, const void *b) {
    const lw_ranked_site *x = a, *y = b;
    if (x->leak != y->leak) return x->leak ? -1 : 1;
    if (x->leak && x->slope != y->slope) return x->slope > y->slope ? -1 : 1;
    if (x->live_bytes != y->live_bytes) return x->live_bytes > y->live_bytes ? -1 : 1;
    if (x->alloc_bytes != y->alloc_bytes) return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
    return x->site->id < y->site->id ? -1 : x->site->id > y->site->id;
}

lw_ranked_site *lw_sites_ranked(const lw_site_views *vs, size_t *np) {
    size_t n = 0, cap = lw_sites_count() + 1;
    lw_ranked_site *all = calloc(cap, sizeof *all);
    if (all) {
        for (lw_site *s = lw_sites_first(); s && n < cap - 1; s = s->next) {
            const lw_site_view *v = lw_site_view_of(vs, s);
            lw_site_counts c;
            lw_site_get(s, &c);
            all[n++] = (lw_ranked_site){
                s, c.live_bytes, c.alloc_bytes, v != NULL, v ? v->growth.slope : 0, c};
        }
        lw_site *o = lw_site_overflow();
        lw_site_counts c;
        lw_site_get(o, &c);
        if (c.alloc_count || c.failed_count)
            all[n++] = (lw_ranked_site){o, c.live_bytes, c.alloc_bytes, 0, 0, c};
        qsort(all, n, sizeof *all, by_relevance);
    }
    *np = n;
    return all;
}

size_t lw_sites_shown(void) {
    size_t limit = (size_t)lw_opt_int(LW_OPT_REPORT_SITES);
    size_t nt = lw_torch_info_sites(NULL);
    return nt > limit ? 0 : limit - nt;
}

int lw_site_lead_ranked(const lw_ranked_site *all, size_t n, const lw_site **site, double *rate) {
    const lw_site *top = n && all ? all[0].site : NULL;
    /* Live as ranked, not as now: a site freed meanwhile (another thread
     * still allocating at exit) left the answer without a site while the
     * report, ranked again, named its first one. */
    int rc = !top ? -1 : all[0].leak ? 1 : all[0].live_bytes > 0 ? 0 : -1;
    if (rc == 1) *rate = all[0].slope;
    *site = rc >= 0 ? top : NULL;
    return rc;
}

const lw_ranked_site *lw_ranked_find(const lw_ranked_site *all, size_t n, const lw_site *s) {
    for (size_t i = 0; all && s && i < n; i++)
        if (all[i].site == s) return &all[i];
    return NULL;
}
