/* SPDX-License-Identifier: Apache-2.0 */
/* Pinned host memory's series (growth_host.h). */
#include "growth_host.h"
#include "growth_global.h"
#include "growth_run.h"
#include "growth_unmarked.h"

#include "attribution.h"
#include "tracked.h"

#include "runstate.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>

/* Pinned host memory: host RAM, so never part of the floor of the device;
 * its own series and verdict (same rules), evaluated once it has held any. */
static struct {
    lw_tracked t;
    int seen;
} host;

/* The sites a pinned host leak comes from (lw_growth_host_judge_sites). */
static double host_sites_onset = NAN;
/* Its sites are judged (a leaking site found): the PyTorch helper's cue to
 * look for what keeps them (lw_growth_torch_counters' bit 1), read without
 * the lock. */
static _Atomic unsigned char host_cue;

void lw_growth_host_init(void) {
    lw_tracked_init(&host.t, LW_TRACKED_RISES);
}

/* Returns 1 when the series was evaluated. */
int lw_growth_host_add(const lw_growth_point *pt) {
    if (pt->host_peak > 0) host.seen = 1;
    if (!host.seen) return 0;
    lw_tracked_add(&host.t, pt->x, pt->t, (double)pt->host_floor, (double)pt->host_peak);
    if (!lw_tracked_due(&host.t)) return 0;
    lw_tracked_evaluate(&host.t);
    return 1;
}

void lw_growth_host_forget(void) {
    lw_tracked_forget(&host.t);
    host.seen = 0;
    host_sites_onset = NAN;
    atomic_store(&host_cue, 0);
}

static int host_leaking(void) {
    return host.seen &&
           (host.t.decision.announced == LW_VERDICT_LEAK || host.t.last.verdict == LW_VERDICT_LEAK);
}

void lw_growth_host_judge_sites(void) {
    if (!host_leaking()) {
        host_sites_onset = NAN;
        atomic_store(&host_cue, 0);
        return;
    }
    const lw_tracked *u = lw_growth_unmarked_series();
    if (lw_growth_global.decision.announced == LW_VERDICT_LEAK ||
        lw_growth_global.last.verdict == LW_VERDICT_LEAK ||
        u->decision.announced == LW_VERDICT_LEAK || u->last.verdict == LW_VERDICT_LEAK) {
        atomic_store(&host_cue, 0);
        return;
    }
    host_sites_onset = lw_attribution_judge(&host.t.last);
    atomic_store(&host_cue, isfinite(host_sites_onset) ? 1 : 0);
}

void lw_growth_host_flush(void) {
    if (host.seen && lw_tracked_changed(&host.t)) lw_tracked_evaluate(&host.t);
    lw_growth_host_judge_sites();
}

void lw_growth_host_finish(void) {
    if (host.seen && lw_tracked_changed(&host.t)) lw_tracked_evaluate(&host.t);
    lw_tracked_final(&host.t);
    lw_growth_host_judge_sites();
}

int lw_growth_host_cue(void) {
    return atomic_load_explicit(&host_cue, memory_order_relaxed);
}

void lw_growth_host_get(lw_host_state *out, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lw_growth_lock);
    out->seen = host.seen;
    out->verdict = host.t.decision.announced;
    snprintf(out->reason, sizeof out->reason, "%s", host.t.decision.reason);
    out->last = host.t.last;
    out->points = host.t.series.points;
    if (bins && nbins) *nbins = lw_series_get(&host.t.series, bins, max);
    pthread_mutex_unlock(&lw_growth_lock);
}

const lw_series *lw_growth_host_primary(lw_growth_state *st) {
    if (st->verdict == LW_VERDICT_LEAK || !host.seen ||
        host.t.decision.announced != LW_VERDICT_LEAK)
        return NULL;
    st->verdict = LW_VERDICT_LEAK;
    st->memory_kind = "pinned_host";
    st->signal = "pinned_host";
    st->signal_device = -1;
    st->from_unmarked = 0;
    st->last = host.t.last;
    double hi = isfinite(st->last.onset_hi) ? st->last.onset_hi : st->last.onset_x;
    if (isfinite(st->last.onset_x) && isfinite(host_sites_onset) && host_sites_onset <= hi)
        st->last.onset_x = st->last.onset_lo = st->last.onset_hi = host_sites_onset;
    if (isfinite(st->last.onset_x) && st->last.onset_x < 1)
        st->last.onset_x = st->last.onset_lo = 1;
    st->first_leak_step = lw_tracked_first_leak_step(&host.t);
    st->step_source = lw_growth_r.marker_mode ? "marker" : "time";
    st->steps = lw_growth_r.marker_mode ? lw_step_now() : lw_intervals_now();
    snprintf(st->reason, sizeof st->reason, "pinned host memory: %.130s", host.t.decision.reason);
    return &host.t.series;
}
