/* SPDX-License-Identifier: Apache-2.0 */
#include "series.h"

#include <math.h>
#include <stdlib.h>
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

void lw_pace_reset(lw_pace *p) {
    p->head = p->len = 0;
    p->points = 0;
}

void lw_pace_add(lw_pace *p, double x, double t) {
    p->x[p->head] = x;
    p->t[p->head] = t;
    p->head = (p->head + 1) % LW_PACE_POINTS;
    if (p->len < LW_PACE_POINTS) p->len++;
    p->points++;
}

typedef struct {
    double per_unit, dx, dt;
} pace_step;

static int by_per_unit(const void *a, const void *b) {
    double u = ((const pace_step *)a)->per_unit, v = ((const pace_step *)b)->per_unit;
    return (u > v) - (u < v);
}

double lw_pace_rate(const lw_pace *p) {
    uint64_t half = p->points / 2;
    int m = p->len - 1;
    if ((uint64_t)m > half) m = (int)half;
    if (m < 2) return NAN;
    /* On the heap: this may run on the job's own thread at exit. */
    pace_step *s = malloc(sizeof *s * (size_t)m);
    if (!s) return NAN;
    int k = 0;
    for (int i = 0; i < m; i++) {
        int b = (p->head - 1 - i + 2 * LW_PACE_POINTS) % LW_PACE_POINTS;
        int a = (b - 1 + LW_PACE_POINTS) % LW_PACE_POINTS;
        double dx = p->x[b] - p->x[a], dt = p->t[b] - p->t[a];
        if (!(dx > 0) || !(dt >= 0)) continue;
        s[k].per_unit = dt / dx;
        s[k].dx = dx;
        s[k].dt = dt;
        k++;
    }
    if (k < 2) {
        free(s);
        return NAN;
    }
    qsort(s, (size_t)k, sizeof *s, by_per_unit);
    int cut = k / 10;
    double dx = 0, dt = 0;
    for (int i = cut; i < k - cut; i++)
        dx += s[i].dx, dt += s[i].dt;
    free(s);
    return dt > 0 ? dx / dt : NAN;
}
