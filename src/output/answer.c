/* SPDX-License-Identifier: Apache-2.0 */
/* The run's answer, chosen once (answer.h). */
#include "answer.h"

#include "report_fields.h"

#include "live.h"
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

const char *lw_answer_step_unit(const lw_growth_state *g, char *module, size_t mn) {
    char unit[32];
    if (module && mn) module[0] = '\0';
    if (!strcmp(g->step_source, "time")) return "interval";
    if (lw_torch_info_step_unit(unit, sizeof unit, module, mn)) {
        if (!strcmp(unit, "module_call")) return "module_call";
        if (!strcmp(unit, "optimizer_step")) return "optimizer_step";
    }
    return "leakwatch_step";
}

const char *lw_answer_unit_word(const lw_growth_state *g) {
    const char *u = lw_answer_step_unit(g, NULL, 0);
    return !strcmp(u, "interval") ? "interval" : !strcmp(u, "module_call") ? "call" : "step";
}

void lw_report_answer(lw_answer *a, const lw_growth_state *g) {
    lw_answer_init(a);
    a->verdict = lw_verdict_name(g->verdict);
    a->unit = lw_answer_unit_word(g);
    a->steps = (double)g->steps;
    if (g->device_free >= 0) a->free_bytes = (double)g->device_free;
    if (g->device_total >= 0) a->total_bytes = (double)g->device_total;
    if (g->verdict == LW_VERDICT_INCONCLUSIVE) {
        /* Its own reason and what would decide it (fmt.c says them). */
        a->reason = g->reason;
        a->more_steps = g->last.more_steps;
    }
    if (g->verdict == LW_VERDICT_INCONCLUSIVE && isfinite(g->last.slope) && g->last.slope > 0 &&
        isfinite(g->last.lo) && g->last.lo >= 0) {
        /* Growth seen, not yet confirmed: said with its size (fmt.c). */
        a->rate = g->last.slope;
        a->lo = g->last.lo;
        a->hi = g->last.hi;
        a->per_second = g->last.bytes_per_second;
    }
    if (g->verdict == LW_VERDICT_NO_LEAK)
        a->rose_once = lw_answer_rose_once(g->last.slope, (double)g->last.window * g->bin_width,
                                           g->last.noise_bin);
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

/* Not decided yet: the site whose floor rose most from its second point on
 * (its first holds its start: the weights' one allocation is a jump, not a
 * growth), given three points or more. */
static void consider_undecided(lw_site *s, const lw_site_track *t, void *arg) {
    rising_site *r = arg;
    lw_bin b[LW_SITE_BINS + 1];
    int n = lw_series_get(&t->series, b, LW_SITE_BINS + 1);
    if (n < 3) return;
    double by = b[n - 1].floor - b[1].floor;
    if (by > 0 && (by > r->by || (by == r->by && r->site && s->id < r->site->id)))
        r->by = by, r->site = s;
}

/* Not decided yet, and no site has points enough of its own (a short run):
 * the site whose live allocations were made over the most steps (at least 3
 * of them, over 2 steps or more), from the live table: a site that keeps
 * something from step after step, not one that allocated its memory once
 * (weights, however large, however many tensors). Exact, whatever the pace. */
typedef struct {
    uint32_t *lo, *hi, *count;
    size_t n;
} kept_steps;

static void tally_steps(const lw_alloc *a, void *arg) {
    kept_steps *k = arg;
    const lw_site *s = a->site;
    if (!s || !s->id || s->id >= k->n) return;
    uint32_t i = s->id;
    if (!k->count[i] || a->step < k->lo[i]) k->lo[i] = a->step;
    if (!k->count[i] || a->step > k->hi[i]) k->hi[i] = a->step;
    k->count[i]++;
}

static const lw_site *kept_over_steps(void) {
    kept_steps k;
    k.n = lw_sites_count() + 2;
    k.lo = calloc(k.n, sizeof *k.lo);
    k.hi = calloc(k.n, sizeof *k.hi);
    k.count = calloc(k.n, sizeof *k.count);
    const lw_site *best = NULL;
    if (k.lo && k.hi && k.count) {
        lw_live_scan(tally_steps, &k);
        uint32_t best_span = 1, best_count = 0;
        for (lw_site *s = lw_sites_first(); s; s = s->next) {
            if (!s->id || s->id >= k.n || k.count[s->id] < 3) continue;
            uint32_t span = k.hi[s->id] - k.lo[s->id];
            if (span > best_span || (span == best_span && best && k.count[s->id] > best_count))
                best = s, best_span = span, best_count = k.count[s->id];
        }
    }
    free(k.lo);
    free(k.hi);
    free(k.count);
    return best;
}

void lw_run_answer_ranked(lw_run_answer *r, const lw_growth_state *g, const lw_ranked_site *all,
                          size_t n) {
    memset(r, 0, sizeof *r);
    r->g = *g;
    lw_report_answer(&r->a, &r->g); /* its reason points into r->g */
    if (lw_anatomy_oom_get(r->oom_cause, sizeof r->oom_cause, r->oom_evidence,
                           sizeof r->oom_evidence, r->oom_remedy, sizeof r->oom_remedy)) {
        r->a.oom_cause = r->oom_cause;
        r->a.oom_evidence = r->oom_evidence;
        r->a.oom_remedy = r->oom_remedy;
    }
    /* The report's answer lists its first site when the line names none. */
    r->entry = n && all ? all[0].site : NULL;
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
    int leaking = lw_site_lead_ranked(all, n, &top, &srate);
    /* Not decided yet: the site that grows, not the largest (a model's
     * weights), is the place to look. */
    int undecided = g->verdict == LW_VERDICT_INCONCLUSIVE && leaking != 1;
    if ((leak && leaking != 1) || undecided) {
        rising_site rs = {NULL, 0};
        lw_growth_each_site(undecided ? consider_undecided : consider, &rs);
        if (!rs.site && undecided) rs.site = kept_over_steps();
        if (rs.site) top = rs.site, leaking = 0, r->a.where_grows = undecided;
    }
    if (!top) return;
    r->site = r->entry = top;
    /* A pinned host leak's site: the helper's owner sentence, if it found one. */
    if (leak && !lw_torch_info_host_owner_text(top->id, r->owner, sizeof r->owner))
        r->owner[0] = '\0';
    lw_site_label(top, r->where, sizeof r->where);
    r->a.where = r->where;
    if (leaking == 1) {
        r->a.where_rate = srate;
    } else if (!leak) {
        /* What it holds as the report writes its entry (counted once, with
         * the order): a site that holds nothing by then (freed meanwhile by
         * a thread still running at exit) is not named, since its entry
         * says it holds nothing. */
        const lw_ranked_site *e = lw_ranked_find(all, n, top);
        int64_t live = e ? e->counts.live_bytes : lw_site_live_bytes(top);
        if (live > 0) {
            r->a.where_live = (double)live;
        } else {
            r->a.where = NULL;
            r->a.where_live = NAN;
        }
    }
}

void lw_run_answer_from(lw_run_answer *r, const lw_growth_state *g) {
    lw_site_views vs;
    lw_site_views_load(&vs, g->verdict == LW_VERDICT_LEAK);
    size_t n = 0;
    lw_ranked_site *all = lw_sites_ranked(&vs, &n);
    lw_run_answer_ranked(r, g, all, n);
    free(all);
    lw_site_views_free(&vs);
}

/* lw_jw_double writes an unknown (NAN) count as null. */
void lw_run_answer_emit(lw_jw *w, const lw_run_answer *r) {
    const lw_answer *a = &r->a;
    lw_jw_str(w, LW_KEY(answer_unit), a->unit);
    lw_jw_bool(w, LW_KEY(answer_says_where), a->where != NULL);
    lw_jw_double(w, LW_KEY(answer_site_bytes_per_step), a->where_rate);
    lw_jw_double(w, LW_KEY(answer_site_live_bytes), a->where_live);
    lw_jw_double(w, LW_KEY(answer_bytes_per_step), a->rate);
    if (isfinite(a->lo) && isfinite(a->hi))
        lw_jw_double_pair(w, LW_KEY(answer_slope_ci), a->lo, a->hi);
    else
        lw_jw_null(w, LW_KEY(answer_slope_ci));
    lw_jw_double(w, LW_KEY(answer_bytes_per_second), a->per_second);
    lw_jw_double(w, LW_KEY(answer_onset_step), a->onset);
    lw_jw_double(w, LW_KEY(answer_onset_end_step), a->onset_hi);
    lw_jw_double(w, LW_KEY(answer_steps), a->steps);
    lw_jw_double(w, LW_KEY(answer_free_bytes), a->free_bytes);
    lw_jw_double(w, LW_KEY(answer_total_bytes), a->total_bytes);
    lw_jw_double(w, LW_KEY(answer_oom_eta_seconds), a->oom_seconds);
    lw_jw_double(w, LW_KEY(answer_oom_eta_steps), a->oom_steps);
    lw_jw_str(w, LW_KEY(answer_reason), a->reason);
    lw_jw_double(w, LW_KEY(answer_steps_to_decide), a->more_steps);
    lw_jw_bool(w, LW_KEY(answer_rose_once), a->rose_once);
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
    if (src->a.reason == src->g.reason) dst->a.reason = dst->g.reason;
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
