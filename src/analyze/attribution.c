/* SPDX-License-Identifier: Apache-2.0 */
#include "attribution.h"

#include "live.h"
#include "runstate.h"
#include "sites.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRACKED_SITES 4096

static int tracked; /* sites with a track */

static lw_site_track *track_of(lw_site *s) {
    if (!s->track && tracked < MAX_TRACKED_SITES) {
        lw_site_track *tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        lw_series_init(&tr->series, tr->bins, LW_SITE_BINS);
        s->track = tr;
        tracked++;
    }
    return s->track;
}

void lw_attribution_point(double x, double t) {
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        int64_t live = lw_site_live_bytes(s);
        int64_t f = atomic_exchange_explicit(&s->floor, live, memory_order_relaxed);
        if (f > live) f = live;
        if (!s->track && (live <= 0 || !track_of(s))) continue;
        lw_series_add(&s->track->series, x, t, (double)f, (double)live);
    }
}

typedef struct {
    uint32_t since;
    uint32_t width; /* of the buckets before `since`; 0: none kept */
} kept_scan;

static void count_kept(const lw_alloc *r, void *arg) {
    const kept_scan *k = arg;
    uint32_t since = k->since;
    if (r->step < since) {
        lw_site_track *tr = r->site ? r->site->track : NULL;
        if (!k->width || !tr) return;
        uint32_t b = r->step / k->width;
        if (b >= LW_SITE_BEFORE) b = LW_SITE_BEFORE - 1;
        if (!tr->before_n[b] || r->step < tr->before_min[b]) tr->before_min[b] = r->step;
        if (!tr->before_n[b] || r->step > tr->before_max[b]) tr->before_max[b] = r->step;
        tr->before_n[b]++;
        return;
    }
    lw_site_track *tr = track_of(r->site);
    if (!tr) return;
    if (!tr->kept_count || r->step < tr->kept_first_step) tr->kept_first_step = r->step;
    if (!tr->kept_count || r->step > tr->kept_last_step) tr->kept_last_step = r->step;
    tr->kept_bytes += r->size;
    tr->kept_count++;
}

/* The step (run clock) where a leaking site's growth demonstrably began:
 * from its first allocation since the onset, back over its live allocations
 * made before it for as long as they follow at the site's own cadence (no
 * gap of more than twice its mean spacing since the onset, none sparser). */
static double site_start(const lw_site_track *tr, uint32_t width) {
    double edge = tr->kept_first_step;
    double spacing = tr->kept_count > 1 ? (double)(tr->kept_last_step - tr->kept_first_step) /
                                              (double)(tr->kept_count - 1)
                                        : 1;
    double gap = fmax(1, 2 * spacing);
    for (int b = LW_SITE_BEFORE - 1; b >= 0 && width; b--) {
        if (!tr->before_n[b]) {
            if (edge - (double)b * width > gap) break;
            continue;
        }
        if (edge - tr->before_max[b] > gap) break;
        if (tr->before_max[b] - tr->before_min[b] > 2 * spacing * tr->before_n[b] + gap) break;
        edge = tr->before_min[b];
    }
    return edge;
}

/* The sites that keep memory from allocations made at or after step
 * `since`, over `span` units of the growth's rate `slope`; spread: the
 * allocations must also span a third of it (steps only: in a phase without
 * marks every allocation carries the same step), and the live allocations
 * before `since` are counted for site_start. */
static void judge_sites(uint32_t since, double span, double slope, int spread) {
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) {
            s->track->kept_bytes = 0, s->track->kept_count = 0;
            memset(s->track->before_n, 0, sizeof s->track->before_n);
        }
    kept_scan k = {since, spread ? (since + LW_SITE_BEFORE - 1) / LW_SITE_BEFORE : 0};
    lw_live_scan(count_kept, &k);
    if (!(span > 0)) span = 1;
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        lw_site_track *tr = s->track;
        if (!tr) continue;
        tr->evaluated = 1;
        memset(&tr->growth, 0, sizeof tr->growth);
        tr->growth.verdict = LW_VERDICT_NO_LEAK;
        tr->growth.lo = tr->growth.hi = tr->growth.p_value = NAN;
        double rate = (double)tr->kept_bytes / span;
        tr->growth.slope = rate;
        if (tr->kept_count >= 3 && rate >= 0.1 * slope &&
            (!spread || tr->kept_last_step - tr->kept_first_step >= span / 3)) {
            tr->growth.verdict = LW_VERDICT_LEAK;
            tr->growth.onset_x = tr->kept_first_step;
            tr->growth.reason = "keeps memory from allocations made since the growth began";
        }
    }
}

double lw_attribution_judge(const lw_growth *g) {
    double onset = isfinite(g->onset_x) ? g->onset_x : 0;
    uint32_t since = (uint32_t)ceil(onset), now = lw_run_clock();
    judge_sites(since, now > since ? (double)(now - since) : 1, g->slope, 1);
    uint32_t width = (since + LW_SITE_BEFORE - 1) / LW_SITE_BEFORE;
    double start = INFINITY;
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track && s->track->growth.verdict == LW_VERDICT_LEAK)
            start = fmin(start, site_start(s->track, width));
    /* An allocation made at run clock c belongs to step c + 1. */
    return isfinite(start) ? fmax(1, start + 1) : NAN;
}

void lw_attribution_judge_phases(uint32_t since, double span, double slope) {
    judge_sites(since, span, slope, 0);
}

void lw_attribution_forget(void) {
    for (lw_site *s = lw_sites_first(); s; s = s->next)
        if (s->track) lw_series_reset(&s->track->series);
}

void lw_attribution_forget_parent(void) {
    tracked = 0;
}
