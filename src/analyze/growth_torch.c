/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's own counters, one series per device (growth_torch.h). */
#include "growth_torch.h"
#include "growth_global.h"
#include "growth_host.h"
#include "growth_queue.h"
#include "growth_run.h"
#include "release_watch.h"

#include "options.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static lw_torch_point tbatch[LW_TORCH_RING]; /* under lw_growth_lock */

typedef struct {
    lw_tracked t; /* the same rule as the global series', its pace and cycles */
    int64_t allocated, reserved, device_free;
    /* A release at the end (the job's leaking function returned, its
     * teardown): the rule of the device's floor (release_watch.h), on the
     * bytes of live tensors. */
    lw_release_watch rel;
} torch_track;

static torch_track *ttracks[LW_TORCH_MAX_DEVICES]; /* under lock; NULL: no point yet */
/* The latest raw evaluation per device sees growth: read by the helper's
 * thread without the lock. */
static _Atomic unsigned char tgrowing[LW_TORCH_MAX_DEVICES];

/* LEAKWATCH_LIVE_HOLD: the marked steps a leak of PyTorch's tensor memory
 * holds before it is said while the run goes on (lw_tracked_alarm). The
 * device's own floor and the phases without marks keep the former rule
 * (lw_tracked_warning_due). */
static uint64_t live_hold(void) {
    long h = lw_opt_int(LW_OPT_LIVE_HOLD);
    return h > 0 ? (uint64_t)h : 0;
}

/* The rule of every tracked series (tracked.h): confirmation, withdrawal
 * and the warning's delay; and the raw verdict the helper reads without the
 * lock. */
static void torch_evaluate(int d, torch_track *tr) {
    lw_tracked_evaluate(&tr->t);
    lw_growth_r.evaluations++;
    atomic_store_explicit(&tgrowing[d], tr->t.last.verdict == LW_VERDICT_LEAK,
                          memory_order_relaxed);
    if (lw_tracked_alarm(&tr->t, live_hold()))
        lw_growth_r.warning_due = 1;
    else if (tr->t.hold && tr->t.decision.announced == LW_VERDICT_LEAK)
        lw_growth_r.growing_due = 1;
}

static torch_track *torch_track_of(int d) {
    if (d < 0 || d >= LW_TORCH_MAX_DEVICES) return NULL;
    if (!ttracks[d]) {
        torch_track *tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        lw_tracked_init(&tr->t, LW_TRACKED_PACE | LW_TRACKED_CYCLES);
        /* The first read may predate start-up memory that stays to the
         * end (PyTorch's cuBLAS workspace, taken at the first matrix
         * product): it sets no base, as the device floor's first point. */
        lw_release_init(&tr->rel, 1);
        tr->device_free = -1;
        ttracks[d] = tr;
    }
    return ttracks[d];
}

/* The floor of a point is the bytes of live tensors at the mark, its peak
 * the reserved bytes. */
static void torch_add(const lw_torch_point *pt) {
    torch_track *tr = torch_track_of(pt->device);
    if (!tr) return;
    tr->allocated = pt->allocated;
    tr->reserved = pt->reserved;
    if (pt->device_free >= 0) tr->device_free = pt->device_free;
    /* One point per step or interval: a second reading within the same
     * interval (the helper's clock and the worker's drift apart) only
     * updates the latest values; the series' x must rise. */
    if (tr->t.series.points && !(pt->x > tr->t.last_x)) return;
    lw_release_point(&tr->rel, &tr->t, pt->allocated);
    lw_tracked_add(&tr->t, pt->x, pt->t, (double)pt->allocated, (double)pt->reserved);
    if (lw_tracked_due(&tr->t)) torch_evaluate(pt->device, tr);
}

void lw_growth_torch_drain(void) {
    int n = lw_growth_queue_take_torch(tbatch);
    for (int i = 0; i < n; i++)
        torch_add(&tbatch[i]);
}

void lw_growth_torch_forget(void) {
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        free(ttracks[d]);
        ttracks[d] = NULL;
        atomic_store(&tgrowing[d], 0);
    }
}

void lw_growth_torch_flush(void) {
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++)
        if (ttracks[d] && lw_tracked_changed(&ttracks[d]->t)) torch_evaluate(d, ttracks[d]);
}

void lw_growth_torch_finish(void) {
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        torch_track *tr = ttracks[d];
        if (!tr) continue;
        lw_release_ended_within(&tr->rel, &tr->t);
        if (lw_tracked_changed(&tr->t)) torch_evaluate(d, tr);
        lw_tracked_final(&tr->t);
    }
}

int lw_growth_torch_counters(int device, int64_t allocated, int64_t reserved, int64_t device_free) {
    if (device < 0 || device >= LW_TORCH_MAX_DEVICES || allocated < 0 || reserved < 0) return 0;
    lw_torch_point pt = {device, 0, lw_growth_now_s(), allocated, reserved, device_free};
    lw_growth_queue_torch(pt);
    return atomic_load_explicit(&tgrowing[device], memory_order_relaxed) | lw_growth_host_cue()
                                                                               << 1;
}

int lw_growth_torch_get(lw_torch_device_state *out, int max_devices, lw_bin *bins, int max,
                        int *nbins) {
    int k = 0;
    pthread_mutex_lock(&lw_growth_lock);
    for (int d = 0; d < LW_TORCH_MAX_DEVICES && k < max_devices; d++) {
        torch_track *tr = ttracks[d];
        if (!tr) continue;
        lw_torch_device_state *o = &out[k];
        o->device = d;
        o->verdict = tr->t.decision.announced;
        snprintf(o->reason, sizeof o->reason, "%s", tr->t.decision.reason);
        o->last = tr->t.last;
        o->points = tr->t.series.points;
        o->first_leak_step = lw_tracked_first_leak_step(&tr->t);
        o->allocated = tr->allocated;
        o->reserved = tr->reserved;
        o->device_free = tr->device_free;
        o->bin_width = tr->t.series.width;
        if (bins && nbins) nbins[k] = lw_series_get(&tr->t.series, bins + (size_t)k * max, max);
        k++;
    }
    pthread_mutex_unlock(&lw_growth_lock);
    return k;
}

/* A leak on any device (the fastest-growing one is named), no leak when
 * every device says so, otherwise inconclusive (the device holding the most
 * tensors is named). */
void lw_growth_torch_primary(lw_growth_state *st) {
    int pick = -1, all_no = 1;
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++) {
        const torch_track *tr = ttracks[d];
        if (!tr || !tr->t.series.points) continue;
        if (tr->t.decision.announced != LW_VERDICT_NO_LEAK) all_no = 0;
        if (pick < 0) {
            pick = d;
            continue;
        }
        const torch_track *p = ttracks[pick];
        int leak = tr->t.decision.announced == LW_VERDICT_LEAK,
            pleak = p->t.decision.announced == LW_VERDICT_LEAK;
        if (leak != pleak ? leak
            : leak        ? tr->t.last.slope > p->t.last.slope
                          : tr->allocated > p->allocated)
            pick = d;
    }
    if (pick < 0) return;
    const lw_tracked *tr = &ttracks[pick]->t;
    /* Memory PyTorch's tensors do not account for (an extension's or a
     * library's own cudaMalloc, NCCL buffers, a cache that keeps growing)
     * still shows in leakwatch's own series: a leak confirmed there stands
     * when the tensors do not grow. */
    if (tr->decision.announced != LW_VERDICT_LEAK &&
        lw_growth_global.decision.announced == LW_VERDICT_LEAK)
        return;
    st->signal = "torch_allocated";
    st->signal_device = pick;
    st->verdict = tr->decision.announced == LW_VERDICT_LEAK ? LW_VERDICT_LEAK
                  : all_no                                  ? LW_VERDICT_NO_LEAK
                                                            : LW_VERDICT_INCONCLUSIVE;
    st->last = tr->last;
    /* Never before step (or interval) 1, as lw_growth_cap_onset says it. */
    if (isfinite(st->last.onset_x) && st->last.onset_x < 1) {
        st->last.onset_x = st->last.onset_lo = 1;
        if (isfinite(st->last.onset_hi) && st->last.onset_hi < 1) st->last.onset_hi = 1;
    }
    st->first_leak_step = lw_tracked_first_leak_step(tr);
    if (st->verdict == tr->decision.announced)
        snprintf(st->reason, sizeof st->reason, "tensor memory: %.140s", tr->decision.reason);
    else /* no leak on this device, but not yet on every device */
        snprintf(st->reason, sizeof st->reason,
                 "tensor memory: no leak on device %d, other devices not decided yet", pick);
}

const lw_tracked *lw_growth_torch_series(int d) {
    return d >= 0 && d < LW_TORCH_MAX_DEVICES && ttracks[d] ? &ttracks[d]->t : NULL;
}

int64_t lw_growth_torch_available(int d) {
    const torch_track *tr = d >= 0 && d < LW_TORCH_MAX_DEVICES ? ttracks[d] : NULL;
    if (!tr || tr->device_free < 0) return -1;
    return tr->device_free + (tr->reserved > tr->allocated ? tr->reserved - tr->allocated : 0);
}

uint64_t lw_growth_torch_withdrawn(void) {
    uint64_t n = 0;
    for (int d = 0; d < LW_TORCH_MAX_DEVICES; d++)
        if (ttracks[d]) n += ttracks[d]->t.decision.withdrawn;
    return n;
}
