/* SPDX-License-Identifier: Apache-2.0 */
/* The run's answer, chosen once (answer.h). */
#include "answer.h"

#include "anatomy.h"
#include "site_name.h"
#include "site_rank.h"
#include "sites.h"
#include "torch_info.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lw_report_answer(lw_answer *a, const lw_growth_state *g) {
    lw_answer_init(a);
    a->verdict = lw_verdict_name(g->verdict);
    a->unit = strcmp(g->step_source, "time") ? "step" : "interval";
    a->steps = (double)g->steps;
    if (g->device_free >= 0) a->free_bytes = (double)g->device_free;
    if (g->device_total >= 0) a->total_bytes = (double)g->device_total;
    if (g->verdict != LW_VERDICT_LEAK) return;
    if (g->memory_kind && !strcmp(g->memory_kind, "pinned_host")) {
        a->kind = "pinned_host";
        a->free_bytes = g->host_available >= 0 ? (double)g->host_available : NAN;
        a->total_bytes = g->host_total >= 0 ? (double)g->host_total : NAN;
    }
    a->rate = g->last.slope;
    a->lo = g->last.lo;
    a->hi = g->last.hi;
    a->per_second = g->last.bytes_per_second;
    a->onset = g->last.onset_x;
    if (isfinite(g->last.onset_hi) && g->last.onset_hi > g->last.onset_lo)
        a->onset_hi = g->last.onset_hi;
    lw_growth_oom(g, &a->oom_seconds, &a->oom_steps);
}

typedef struct {
    const lw_site *site;
    double by;
} rising_site;

/* No site has enough points of its own yet (fast steps): the one whose floor
 * rose most, the lowest id between equals. */
static void consider(lw_site *s, const lw_site_track *t, void *arg) {
    rising_site *r = arg;
    lw_bin b[LW_SITE_BINS + 1];
    int n = lw_series_get(&t->series, b, LW_SITE_BINS + 1);
    if (n < 2) return;
    double by = b[n - 1].floor - b[0].floor;
    if (by > 0 && (by > r->by || (by == r->by && r->site && s->id < r->site->id)))
        r->by = by, r->site = s;
}

void lw_run_answer_from(lw_run_answer *r, const lw_growth_state *g) {
    memset(r, 0, sizeof *r);
    r->g = *g;
    lw_report_answer(&r->a, g);
    if (lw_anatomy_oom_get(r->oom_cause, sizeof r->oom_cause, r->oom_evidence,
                           sizeof r->oom_evidence, r->oom_remedy, sizeof r->oom_remedy)) {
        r->a.oom_cause = r->oom_cause;
        r->a.oom_evidence = r->oom_evidence;
        r->a.oom_remedy = r->oom_remedy;
    }
    int leak = g->verdict == LW_VERDICT_LEAK;
    double rate = 0;
    /* The PyTorch override, here only. */
    if (leak && g->signal_device >= 0 && lw_torch_info_sites(&rate) &&
        lw_torch_info_label(r->where, sizeof r->where)) {
        r->torch = 1;
        r->a.where = r->where;
        r->a.where_rate = rate;
        if (!lw_torch_info_owner(r->owner, sizeof r->owner)) r->owner[0] = '\0';
        return;
    }
    const lw_site *top = NULL;
    double srate = NAN;
    int leaking = lw_site_lead(leak, &top, &srate);
    if (leak && leaking != 1) {
        rising_site rs = {NULL, 0};
        lw_growth_each_site(consider, &rs);
        if (rs.site) top = rs.site, leaking = 0;
    }
    if (!top) return;
    r->site = top;
    lw_site_label(top, r->where, sizeof r->where);
    r->a.where = r->where;
    if (leaking == 1)
        r->a.where_rate = srate;
    else if (!leak)
        r->a.where_live = (double)lw_site_live_bytes(top);
}

void lw_run_answer_now(lw_run_answer *r) {
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    lw_run_answer_from(r, &g);
}

void lw_run_answer_copy(lw_run_answer *dst, const lw_run_answer *src) {
    if (dst == src) return;
    *dst = *src;
    if (src->a.where == src->where) dst->a.where = dst->where;
    if (src->a.oom_cause == src->oom_cause) {
        dst->a.oom_cause = dst->oom_cause;
        dst->a.oom_evidence = dst->oom_evidence;
        dst->a.oom_remedy = dst->oom_remedy;
    }
}

/* Per thread: the exit summary renders the report its own thread wrote, not
 * a snapshot written meanwhile by another. A pointer per thread, the answer
 * on the heap (taken once by each thread that writes a report, kept for the
 * thread's life): the library's thread-local block must stay small, since
 * an attach loads it into static TLS space a running process has little of. */
static __thread lw_run_answer *kept;
static __thread int have_kept;

void lw_run_answer_keep(const lw_run_answer *r) {
    if (!kept) kept = malloc(sizeof *kept);
    if (!kept) return;
    lw_run_answer_copy(kept, r);
    have_kept = 1;
}

int lw_run_answer_kept(lw_run_answer *r) {
    if (have_kept && kept) lw_run_answer_copy(r, kept);
    return have_kept && kept;
}

void lw_run_answer_forget(void) {
    have_kept = 0;
}
