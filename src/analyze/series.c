/* SPDX-License-Identifier: Apache-2.0 */
#include "series.h"

#include <string.h>

void lw_series_init(lw_series *s, lw_bin *storage, int cap) {
    memset(s, 0, sizeof *s);
    s->bins = storage;
    s->cap = cap & ~1;
    s->width = 1;
}

void lw_series_reset(lw_series *s) {
    lw_series_init(s, s->bins, s->cap);
}

/* Bins are kept as sums until read: merging is then exact addition. */
static lw_bin merged(const lw_bin *a, const lw_bin *b) {
    lw_bin m = {a->x + b->x, a->t + b->t, a->floor + b->floor,
                a->peak > b->peak ? a->peak : b->peak, a->n + b->n};
    return m;
}

void lw_series_add(lw_series *s, double x, double t, double floor, double peak) {
    lw_bin p = {x, t, floor, peak, 1};
    s->pending = s->pending.n ? merged(&s->pending, &p) : p;
    s->points++;
    if (s->pending.n < s->width) return;
    if (s->len == s->cap) {
        for (int i = 0; i < s->cap / 2; i++)
            s->bins[i] = merged(&s->bins[2 * i], &s->bins[2 * i + 1]);
        s->len = s->cap / 2;
        s->width *= 2;
        /* The pending bin was sized for the old width: it becomes the start
         * of a bin of the new width. */
        if (s->pending.n < s->width) return;
    }
    s->bins[s->len++] = s->pending;
    memset(&s->pending, 0, sizeof s->pending);
}

static lw_bin as_mean(const lw_bin *b) {
    lw_bin m = *b;
    if (b->n) {
        m.x = b->x / b->n;
        m.t = b->t / b->n;
        m.floor = b->floor / b->n;
    }
    return m;
}

int lw_series_get(const lw_series *s, lw_bin *out, int max) {
    int n = 0;
    for (int i = 0; i < s->len && n < max; i++)
        out[n++] = as_mean(&s->bins[i]);
    if (s->pending.n && n < max) out[n++] = as_mean(&s->pending);
    return n;
}
