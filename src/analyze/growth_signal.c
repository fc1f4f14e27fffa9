/* SPDX-License-Identifier: Apache-2.0 */
/* Which series gives the run's verdict (growth_signal.h): the device's
 * floor, unless PyTorch's tensors on a device (growth_torch.c), the phases
 * without marks (growth_unmarked.c) or pinned host memory (growth_host.c)
 * say otherwise; and the state every output reads. */
#include "growth_signal.h"
#include "growth.h"
#include "growth_global.h"
#include "growth_host.h"
#include "growth_run.h"
#include "growth_torch.h"
#include "growth_unmarked.h"

#include "device.h"
#include "host_mem.h"
#include "options.h"
#include "runstate.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static _Atomic int steps_are_calls; /* lw_growth_steps_are_calls */

/* Steps are calls of the job's outermost nn.Module (an inference server,
 * an evaluation loop): between them the job does not work on the GPU (the
 * time after its last request, its teardown), so a floor flat there is no
 * evidence of a clean run. */
void lw_growth_steps_are_calls(void) {
    atomic_store(&steps_are_calls, 1);
}

void lw_growth_signal_forget(void) {
    atomic_store(&steps_are_calls, 0);
}

/* The cycles of the series the verdict comes from (PyTorch's counters on
 * the device that decided, else leakwatch's own floor); none for a verdict
 * from the phases without marks. */
static void growth_cycles(lw_growth_state *st) {
    lw_cycles_init(&st->cycles_raw);
    st->cycles_signal = NULL;
    if (st->from_unmarked || (st->memory_kind && !strcmp(st->memory_kind, "pinned_host"))) return;
    const lw_cycles *c = &lw_growth_global.cycles;
    const char *signal = "live_bytes";
    const lw_tracked *tt = lw_growth_torch_series(st->signal_device);
    if (st->signal_device >= 0 && tt) {
        c = &tt->cycles;
        signal = "torch_allocated";
    }
    st->cycles_raw = *c;
    st->cycles_signal = signal;
}

/* While the run goes on, an announced leak whose live alarm is not raised
 * (lw_tracked_alarm: not held long enough yet, or its latest evaluation
 * holds back) is said as growth, not as a leak, in every view (the live
 * line, top, Prometheus, a dump): no alarm the end of the run takes back.
 * The end of the run decides on all its data. */
static void not_yet_a_leak(lw_growth_state *st) {
    st->growing = 0;
    if (lw_growth_r.finished || st->verdict != LW_VERDICT_LEAK) return;
    const lw_tracked *t = &lw_growth_global;
    const lw_tracked *tt = lw_growth_torch_series(st->signal_device);
    if (st->from_unmarked)
        t = lw_growth_unmarked_series();
    else if (st->signal_device >= 0 && tt)
        t = tt;
    if (t->alarm || !t->hold) return;
    st->verdict = LW_VERDICT_INCONCLUSIVE;
    st->growing = 1;
    char why[sizeof st->reason];
    snprintf(why, sizeof why, "%s", st->reason);
    snprintf(st->reason, sizeof st->reason, "growing, not yet a leak (%.130s)", why);
}

void lw_growth_get(lw_growth_state *st, lw_bin *bins, int max, int *nbins) {
    pthread_mutex_lock(&lw_growth_lock);
    memset(st, 0, sizeof *st);
    st->memory_kind = "device";
    st->host_available = st->host_total = -1;
    st->verdict = lw_growth_global.decision.announced;
    st->last = lw_growth_global.last;
    lw_growth_cap_onset(&st->last);
    snprintf(st->reason, sizeof st->reason, "%s", lw_growth_global.decision.reason);
    st->signal = "live_bytes";
    st->signal_device = -1;
    st->first_leak_step = lw_tracked_first_leak_step(&lw_growth_global);
    st->withdrawn = lw_growth_global.decision.withdrawn;
    st->released_bytes = lw_growth_released_bytes();
    st->decided_at_exit = lw_growth_r.decided_at_exit;
    st->withdrawn += lw_growth_torch_withdrawn();
    lw_growth_torch_primary(st);
    int marker_mode = lw_growth_r.marker_mode;
    st->step_source = marker_mode ? "marker" : "time";
    st->steps = marker_mode ? lw_step_now() : lw_intervals_now();
    const lw_tracked *u = lw_growth_unmarked_series();
    st->unmarked_intervals = u->series.points;
    const lw_series *shown = &lw_growth_global.series;
    /* The unmarked phases give the verdict, in intervals, when they grow
     * and the marked steps do not, or when they are clean and cover more of
     * the run than the marked steps, which cannot decide (a few training
     * steps, then a long validation). */
    int from_unmarked =
        marker_mode &&
        ((st->verdict != LW_VERDICT_LEAK && u->decision.announced == LW_VERDICT_LEAK) ||
         (st->verdict == LW_VERDICT_INCONCLUSIVE && u->decision.announced == LW_VERDICT_NO_LEAK &&
          !steps_are_calls && u->series.points > st->steps));
    if (from_unmarked) {
        st->verdict = u->decision.announced;
        st->signal = "live_bytes";
        st->signal_device = -1;
        st->last = u->last;
        st->step_source = "time";
        st->steps = u->series.points;
        st->first_leak_step = lw_tracked_first_leak_step(u);
        st->from_unmarked = 1;
        st->interval_s = lw_growth_unmarked_interval_s();
        snprintf(st->reason, sizeof st->reason, "while no step was marked: %.130s",
                 u->decision.reason);
        shown = &u->series;
    }
    const lw_series *host_shown = lw_growth_host_primary(st);
    if (host_shown) shown = host_shown;
    st->evaluations = lw_growth_r.evaluations;
    lw_device_last_mem(&st->device_free, &st->device_total);
    st->available = st->device_free;
    int64_t torch_available = lw_growth_torch_available(st->signal_device);
    if (st->signal_device >= 0 && torch_available >= 0) {
        /* What PyTorch can still use on that device: the driver's free
         * memory plus what its cache holds that no tensor uses. */
        st->available = torch_available;
    }
    if (!strcmp(st->memory_kind, "pinned_host")) {
        /* Pinned host memory is page-locked RAM: what runs out is the
         * host's memory (read now). */
        lw_host_mem(&st->host_available, &st->host_total);
        st->available = st->host_available;
    }
    growth_cycles(st);
    if (!st->from_unmarked) st->interval_s = (double)lw_opt_int(LW_OPT_INTERVAL_MS) / 1000.0;
    st->bin_width = shown->width;
    if (bins && nbins) *nbins = lw_series_get(shown, bins, max);
    not_yet_a_leak(st);
    pthread_mutex_unlock(&lw_growth_lock);
}
