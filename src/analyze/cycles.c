/* SPDX-License-Identifier: Apache-2.0 */
#include "cycles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_POINTS 4
#define NOISE_FACTOR 6.0

void lw_cycles_init(lw_cycles *c) {
    memset(c, 0, sizeof *c);
    c->last_release_x = NAN;
    c->floor = NAN;
}

static void open_at(lw_cycles *c, double x, double y, int from_release) {
    c->open = 1;
    c->from_release = from_release;
    c->start_x = c->max_x = c->prev_x = x;
    c->start_y = c->max_y = c->prev_y = y;
    c->max_up = 0;
    c->npoints = 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median |step-to-step change| of the newest steps; NAN before 3. */
static double noise(const lw_cycles *c) {
    if (c->nrecent < 3) return NAN;
    double v[LW_CYCLES_RECENT];
    memcpy(v, c->recent, sizeof(double) * c->nrecent);
    qsort(v, c->nrecent, sizeof *v, cmp_double);
    uint32_t n = c->nrecent;
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void lw_cycles_add(lw_cycles *c, double x, double y) {
    if (!isfinite(x) || !isfinite(y)) return;
    if (!c->open) {
        open_at(c, x, y, 0);
        return;
    }
    double d = y - c->prev_y, rise = c->max_y - c->start_y, sigma = noise(c);
    if (d < 0 && c->npoints >= 2 && -d > NOISE_FACTOR * sigma &&
        (!c->from_release || (rise > 0 && -d >= 0.5 * rise))) {
        /* A release. It ends a cycle that counts when the rise was
         * gradual; either way a new cycle starts at this low. */
        if (c->from_release && c->npoints >= MIN_POINTS && rise > 0 && c->max_up <= 0.5 * rise &&
            c->max_x > c->start_x) {
            c->count++;
            c->length_sum += x - c->start_x;
            c->last_release_x = x;
            c->rise_sum += rise;
            c->rise_dx_sum += c->max_x - c->start_x;
            if (rise > c->peak) c->peak = rise, c->peak_x = c->max_x;
            if (!(c->start_y >= c->floor)) c->floor = c->start_y;
        }
        open_at(c, x, y, 1);
        return;
    }
    /* The first change of the run (from before the job's first
     * allocations) says nothing of its noise. */
    if (c->npoints >= 2 || c->from_release || c->count) {
        c->recent[c->recent_at] = fabs(d);
        c->recent_at = (c->recent_at + 1) % LW_CYCLES_RECENT;
        if (c->nrecent < LW_CYCLES_RECENT) c->nrecent++;
    }
    if (d > c->max_up) c->max_up = d;
    if (y > c->max_y) c->max_y = y, c->max_x = x;
    c->prev_x = x;
    c->prev_y = y;
    c->npoints++;
}

int lw_cycles_get(const lw_cycles *c, lw_cycles_summary *s) {
    s->count = c->count;
    s->period = c->count ? c->length_sum / (double)c->count : NAN;
    s->rise_per_step = c->rise_dx_sum > 0 ? c->rise_sum / c->rise_dx_sum : NAN;
    s->peak = c->count ? c->peak : NAN;
    s->floor = c->count ? c->floor : NAN;
    s->last_release = c->last_release_x;
    return c->count >= 2;
}
