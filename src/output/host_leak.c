/* SPDX-License-Identifier: Apache-2.0 */
/* The live blocks of a pinned host leak's site (host_leak.h). */
#include "host_leak.h"

#include "live.h"
#include "site_rank.h"
#include "sites.h"
#include "totals.h"

#include <stdlib.h>

typedef struct {
    const lw_site_views *vs;
    uint64_t *bytes; /* per view: the pinned host bytes live now */
} tally;

static void tally_host(const lw_alloc *a, void *arg) {
    tally *t = arg;
    if (a->cls != LW_CLASS_HOST || a->kind != LW_KIND_PINNED_HOST || !a->site) return;
    const lw_site_view *v = lw_site_view_of(t->vs, a->site);
    if (v) t->bytes[v - t->vs->v] += a->size;
}

typedef struct {
    const lw_site *site;
    unsigned long long *pairs;
    int max, n;
} collect;

static void collect_host(const lw_alloc *a, void *arg) {
    collect *c = arg;
    if (a->site != c->site || a->cls != LW_CLASS_HOST || a->kind != LW_KIND_PINNED_HOST) return;
    if (c->n >= c->max) return;
    c->pairs[2 * c->n] = a->key;
    c->pairs[2 * c->n + 1] = a->size;
    c->n++;
}

int lw_host_leak_blocks(unsigned long long *pairs, int max_pairs, uint32_t *site_id) {
    lw_site_views vs;
    lw_site_views_load(&vs, 1);
    int rc = -1;
    tally t = {&vs, vs.n ? calloc(vs.n, sizeof *t.bytes) : NULL};
    if (t.bytes) {
        lw_live_scan(tally_host, &t);
        const lw_site_view *best = NULL;
        uint64_t best_bytes = 0;
        for (size_t i = 0; i < vs.n; i++) {
            const lw_site_view *v = &vs.v[i];
            if (!t.bytes[i]) continue;
            if (!best || v->growth.slope > best->growth.slope ||
                (v->growth.slope == best->growth.slope && t.bytes[i] > best_bytes))
                best = v, best_bytes = t.bytes[i];
        }
        if (best) {
            collect c = {best->site, pairs, pairs && max_pairs > 0 ? max_pairs : 0, 0};
            if (c.max) lw_live_scan(collect_host, &c);
            *site_id = best->site->id;
            rc = c.n;
        }
    }
    free(t.bytes);
    lw_site_views_free(&vs);
    return rc;
}
