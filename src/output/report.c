/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON report: what it holds, emitted to a stream (its format is a
 * contract: docs/report-fields.md). Emission only: the order of the sites
 * is site_rank.c's, their frames, place to look and label site_name.c's,
 * the site the answer names answer.c's. report_file.c writes it to files,
 * summary.c prints the exit summary. */
#include "report.h"

#include "report_fields.h"

#include "answer.h"
#include "anatomy.h"
#include "site_name.h"
#include "site_rank.h"

#include "clock.h"
#include "json_write.h"
#include "runstate.h"
#include "live.h"
#include "options.h"
#include "stack.h"
#include "record.h"
#include "growth.h"
#include "imports.h"
#include "sites.h"
#include "symbolize.h"
#include "torch_info.h"
#include "warning.h"
#include "totals.h"
#include "where.h"
#include "rank.h"
#include "real.h"
#include "device.h"

#include <leakwatch.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TORCH_BINS 300
#define REPORT_WRITE_BUF 16384

static void emit_counts(lw_jw *w, lw_counts c) {
    lw_jw_uint(w, LW_KEY(COUNTS_alloc_count), c.alloc_count);
    lw_jw_uint(w, LW_KEY(COUNTS_free_count), c.free_count);
    lw_jw_uint(w, LW_KEY(COUNTS_failed_alloc_count), c.failed_count);
    lw_jw_int(w, LW_KEY(COUNTS_live_bytes), c.live_bytes);
    lw_jw_int(w, LW_KEY(COUNTS_live_count), c.live_count);
    lw_jw_int(w, LW_KEY(COUNTS_peak_live_bytes), c.peak_live_bytes);
}

static void emit_totals(lw_jw *w) {
    lw_jw_object(w, LW_KEY(totals));
    emit_counts(w, lw_totals_get(-2, LW_KIND_COUNT));
    lw_jw_uint(w, LW_KEY(totals_unknown_free_count), lw_totals_unknown_frees());
    lw_jw_int(w, LW_KEY(totals_mapped_bytes), lw_totals_mapped_bytes());
    /* Other processes' memory opened here: in none of the counters above. */
    lw_jw_object(w, LW_KEY(totals_imported));
    emit_counts(w, lw_imports_get());
    lw_jw_int(w, LW_KEY(totals_imported_mapped_bytes), lw_imports_mapped_bytes());
    lw_jw_end(w);
    lw_jw_object(w, LW_KEY(totals_by_kind));
    for (int k = 0; k < LW_KIND_COUNT; k++) {
        lw_jw_object(w, lw_kind_name((lw_kind)k));
        emit_counts(w, lw_totals_get(-2, (lw_kind)k));
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_array(w, LW_KEY(totals_by_device));
    uint64_t seen = lw_totals_devices_seen();
    for (int d = -1; d < LW_MAX_DEVICES; d++) {
        if (!(seen & (1ull << (d + 1)))) continue;
        lw_jw_object(w, NULL);
        lw_jw_int(w, LW_KEY(totals_by_device_device), d);
        emit_counts(w, lw_totals_get(d, LW_KIND_COUNT));
        lw_jw_object(w, LW_KEY(totals_by_device_by_kind));
        for (int k = 0; k < LW_KIND_COUNT; k++) {
            lw_jw_object(w, lw_kind_name((lw_kind)k));
            emit_counts(w, lw_totals_get(d, (lw_kind)k));
            lw_jw_end(w);
        }
        lw_jw_end(w);
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_end(w);
}

/* One frame; inlined ones exist only in the debug information and share the
 * address, module and offset of the frame they were inlined into. */
static void emit_frame(lw_jw *w, const lw_site_frame *e) {
    char addr[32];
    const lw_symbol *s = e->sym;
    lw_jw_object(w, NULL);
    lw_jw_str(w, LW_KEY(sites_frames_kind), e->ref.python ? "python" : "native");
    lw_jw_str(w, LW_KEY(sites_frames_function), e->ref.function);
    lw_jw_str(w, LW_KEY(sites_frames_file), e->ref.file);
    if (e->ref.line > 0)
        lw_jw_int(w, LW_KEY(sites_frames_line), e->ref.line);
    else
        lw_jw_null(w, LW_KEY(sites_frames_line));
    if (e->ref.python) {
        lw_jw_null(w, LW_KEY(sites_frames_module));
        lw_jw_null(w, LW_KEY(sites_frames_address));
        lw_jw_null(w, LW_KEY(sites_frames_offset));
    } else {
        lw_jw_str(w, LW_KEY(sites_frames_module), s ? s->module : NULL);
        snprintf(addr, sizeof addr, "0x%lx", (unsigned long)e->ip);
        lw_jw_str(w, LW_KEY(sites_frames_address), addr);
        if (s && s->module) {
            snprintf(addr, sizeof addr, "0x%lx", (unsigned long)s->offset);
            lw_jw_str(w, LW_KEY(sites_frames_offset), addr);
        } else {
            lw_jw_null(w, LW_KEY(sites_frames_offset));
        }
        if (e->inlined) lw_jw_bool(w, LW_KEY(sites_frames_inlined), 1);
    }
    lw_jw_end(w);
}

/* "where": the place to look, by frame index into "frames", with its label
 * as every output shows it; distinct: the distinguishing frame or -1; key:
 * its row (sites[].where or answer.where, the members WHERE's). */
static void emit_where(lw_jw *w, lw_field key, const lw_site_frames *l, int distinct) {
    const char *why = NULL;
    int k = lw_site_frames_where(l, &why);
    if (k < 0) {
        lw_jw_null(w, lw_report_field_key(key));
        return;
    }
    char label[512];
    const lw_frame_ref *r = &l->f[k].ref;
    lw_jw_object(w, lw_report_field_key(key));
    lw_jw_int(w, LW_KEY(WHERE_frame), k);
    lw_jw_str(w, LW_KEY(WHERE_label), lw_site_frames_label(l, k, distinct, label, sizeof label));
    lw_jw_str(w, LW_KEY(WHERE_file), r->file);
    if (r->line > 0)
        lw_jw_int(w, LW_KEY(WHERE_line), r->line);
    else
        lw_jw_null(w, LW_KEY(WHERE_line));
    lw_jw_str(w, LW_KEY(WHERE_function), r->function);
    lw_jw_str(w, LW_KEY(WHERE_why), why);
    lw_jw_str(w, LW_KEY(WHERE_place_label), lw_where_label(r, label, sizeof label));
    if (distinct >= 0 && (size_t)distinct < l->n)
        lw_jw_int(w, LW_KEY(WHERE_distinct_frame), distinct);
    else
        lw_jw_null(w, LW_KEY(WHERE_distinct_frame));
    lw_jw_end(w);
}

static void emit_frames(lw_jw *w, const lw_site_frames *l) {
    lw_jw_array(w, LW_KEY(sites_frames));
    for (size_t i = 0; i < l->n; i++)
        emit_frame(w, &l->f[i]);
    lw_jw_end(w);
}

/* "in backward, called from train.py:31" (site_name.h). */
static void emit_backward_note(lw_jw *w, const lw_site *s) {
    char note[300];
    if (lw_site_backward_note(s, note, sizeof note)) lw_jw_str(w, LW_KEY(sites_note), note);
}

/* A series of bins as columns (compact, easy to plot): "series", with one
 * array per column, each column a field of lw_bin under its own key (its
 * row); the series' own row first. */
typedef struct {
    lw_field key;
    size_t field; /* offsetof(lw_bin, ...); unused for the series' own row */
} bin_column;
#define BIN_COL(id, f)                                                                             \
    { LW_FIELD_##id, offsetof(lw_bin, f) }
#define BIN_SERIES(id)                                                                             \
    { LW_FIELD_##id, 0 }
static const bin_column site_columns[] = {BIN_SERIES(sites_series), BIN_COL(sites_series_x, x),
                                          BIN_COL(sites_series_floor, floor)};
static const bin_column host_columns[] = {BIN_SERIES(growth_pinned_host_series),
                                          BIN_COL(growth_pinned_host_series_x, x),
                                          BIN_COL(growth_pinned_host_series_floor, floor)};
static const bin_column run_columns[] = {BIN_SERIES(series), BIN_COL(series_x, x),
                                         BIN_COL(series_time_s, t), BIN_COL(series_floor, floor),
                                         BIN_COL(series_peak, peak)};
static const bin_column torch_columns[] = {
    BIN_SERIES(torch_devices_series), BIN_COL(torch_devices_series_x, x),
    BIN_COL(torch_devices_series_time_s, t), BIN_COL(torch_devices_series_allocated, floor),
    BIN_COL(torch_devices_series_reserved, peak)};
#define COLUMNS(a) a, sizeof a / sizeof a[0]

static void emit_bins(lw_jw *w, const lw_bin *b, int n, const bin_column *cols, size_t ncols) {
    lw_jw_object(w, lw_report_field_key(cols[0].key));
    for (size_t c = 1; c < ncols; c++) {
        lw_jw_array(w, lw_report_field_key(cols[c].key));
        for (int i = 0; i < n; i++) {
            double v;
            memcpy(&v, (const char *)&b[i] + cols[c].field, sizeof v);
            lw_jw_double(w, NULL, v);
        }
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

static void emit_site(lw_jw *w, lw_symtab *syms, const lw_ranked_site *r, const lw_site_view *v,
                      int rank, int distinct) {
    const lw_site *s = r->site;
    lw_jw_object(w, NULL);
    lw_jw_uint(w, LW_KEY(sites_id), s->id);
    /* Summed over the threads' shards, once, when the sites were ranked: the
     * fields agree, with the order and with the answer (answer.c). */
    const lw_site_counts c = r->counts;
    lw_jw_int(w, LW_KEY(sites_live_bytes), c.live_bytes);
    /* Derived: keeping a live count would cost the hot path a count. */
    lw_jw_int(w, LW_KEY(sites_live_count), c.live_count);
    lw_jw_uint(w, LW_KEY(sites_alloc_count), c.alloc_count);
    lw_jw_uint(w, LW_KEY(sites_alloc_bytes), c.alloc_bytes);
    lw_jw_uint(w, LW_KEY(sites_free_count), c.free_count);
    lw_jw_uint(w, LW_KEY(sites_failed_alloc_count), c.failed_count);
    lw_jw_bool(w, LW_KEY(sites_leak), v != NULL);
    lw_jw_double(w, LW_KEY(sites_bytes_per_step), v ? v->growth.slope : 0.0);
    if (v) {
        lw_jw_int(w, LW_KEY(sites_rank), rank);
        lw_jw_double_pair(w, LW_KEY(sites_slope_ci), v->growth.lo, v->growth.hi);
        lw_jw_double(w, LW_KEY(sites_p_value), v->growth.p_value);
    }
    lw_jw_bool(w, LW_KEY(sites_pooled), s == lw_site_overflow());
    /* The native frames stop at the Python interpreter: what was below it
     * (main, the interpreter's start) is described by the Python frames. */
    lw_jw_bool(w, LW_KEY(sites_native_cut_at_python), s->native_cut != 0);
    if (v) emit_bins(w, v->bins, v->nbins, COLUMNS(site_columns));
    emit_backward_note(w, s);
    /* A pinned host leak's site: what keeps its blocks alive (the PyTorch
     * helper's owner search), as PyTorch's own sites carry it. */
    lw_torch_info_host_owner_emit(w, s->id);
    lw_site_frames l;
    lw_site_frames_collect(&l, syms, s);
    emit_where(w, LW_FIELD_sites_where, &l, distinct);
    emit_frames(w, &l);
    lw_site_frames_free(&l);
    lw_jw_end(w);
}

/* Writes the sites, most relevant first (all, ranked from vs); returns the
 * first one's distinguishing frame. */
static int emit_sites(lw_jw *w, lw_symtab *syms, const lw_site_views *vs, lw_ranked_site *all,
                      size_t n) {
    lw_site_places ps;
    lw_site_places_load(&ps, syms, vs, all, n < lw_sites_shown() ? n : lw_sites_shown());
    size_t limit = (size_t)lw_opt_int(LW_OPT_REPORT_SITES), written = 0;
    /* Sites found in PyTorch's allocation history (source "pytorch_history")
     * come first: they name tensors, where the others name segments. */
    size_t nt = lw_torch_info_sites(NULL);
    if (nt > limit) nt = limit;
    lw_jw_uint(w, LW_KEY(sites_total), lw_sites_count() + nt);
    lw_jw_array(w, LW_KEY(sites));
    lw_torch_info_emit_sites(w, nt);
    limit -= nt;
    /* Whatever the shim writes, the command must read: the sites stop once
     * they fill LW_REPORT_SITES_BYTES (the most relevant come first), far
     * below what the command accepts. sites_reported says how many. */
    long long start = lw_jw_tell(w);
    for (size_t i = 0; i < n && i < limit; i++) {
        long long at = lw_jw_tell(w);
        if (start >= 0 && at >= 0 && at - start >= LW_REPORT_SITES_BYTES) break;
        emit_site(w, syms, &all[i], lw_site_view_of(vs, all[i].site), all[i].leak ? (int)i + 1 : 0,
                  lw_site_places_distinct(&ps, all[i].site));
        written++;
    }
    lw_jw_end(w);
    lw_jw_uint(w, LW_KEY(sites_reported), nt + written);
    int top_distinct = n && all ? lw_site_places_distinct(&ps, all[0].site) : -1;
    lw_site_places_free(&ps);
    return top_distinct;
}

static void emit_failures(lw_jw *w) {
    lw_failure f[LW_FAILURES_KEPT];
    int n = lw_failures_get(f, LW_FAILURES_KEPT);
    lw_jw_array(w, LW_KEY(failed_allocations));
    for (int i = 0; i < n; i++) {
        lw_jw_object(w, NULL);
        lw_jw_uint(w, LW_KEY(failed_allocations_size), f[i].size);
        lw_jw_str(w, LW_KEY(failed_allocations_kind), lw_kind_name((lw_kind)f[i].kind));
        lw_jw_int(w, LW_KEY(failed_allocations_device), f[i].device);
        lw_jw_int(w, LW_KEY(failed_allocations_result), f[i].result);
        lw_jw_uint(w, LW_KEY(failed_allocations_step), f[i].step);
        lw_jw_double(w, LW_KEY(failed_allocations_time_s), (double)f[i].time_ns / 1e9);
        lw_jw_uint(w, LW_KEY(failed_allocations_site), f[i].site->id);
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

/* What PyTorch can still use on a device: the driver's free memory plus what
 * its cache holds but no tensor uses (reserved - allocated), which it reuses
 * before asking the driver for more. -1 when unknown. */
static int64_t available_of(const lw_torch_device_state *t) {
    if (t->device_free < 0) return -1;
    int64_t cached = t->reserved > t->allocated ? t->reserved - t->allocated : 0;
    return t->device_free + cached;
}

/* Pinned host memory is host RAM: its own verdict and series, beside the
 * device verdict (which never counts it). Absent when none was held. */
static void emit_pinned_host(lw_jw *w) {
    /* Not static: several threads may write reports at once. */
    lw_bin *b = malloc(TORCH_BINS * sizeof *b);
    if (!b) return;
    lw_host_state h;
    int n = 0;
    lw_growth_host_get(&h, b, TORCH_BINS, &n);
    if (!h.seen) {
        free(b);
        return;
    }
    lw_jw_object(w, LW_KEY(growth_pinned_host));
    lw_jw_str(w, LW_KEY(growth_pinned_host_verdict), lw_verdict_name(h.verdict));
    lw_jw_double(w, LW_KEY(growth_pinned_host_bytes_per_step), h.last.slope);
    lw_jw_double_pair(w, LW_KEY(growth_pinned_host_slope_ci), h.last.lo, h.last.hi);
    lw_jw_double(w, LW_KEY(growth_pinned_host_p_value), h.last.p_value);
    lw_jw_uint(w, LW_KEY(growth_pinned_host_points), h.points);
    lw_jw_str(w, LW_KEY(growth_pinned_host_reason), h.reason[0] ? h.reason : "not evaluated yet");
    emit_bins(w, b, n, COLUMNS(host_columns));
    lw_jw_end(w);
    free(b);
}

/* A count or index, null when unknown (negative). */
static void emit_opt_int(lw_jw *w, const char *key, int64_t v) {
    if (v >= 0)
        lw_jw_int(w, key, v);
    else
        lw_jw_null(w, key);
}

/* The fitted growth of a series: rate per step and per second, its 95%
 * interval and the trend test, under the rows of growth's or of a PyTorch
 * device's. */
typedef struct {
    lw_field per_step, per_second, ci, p_value;
} fit_keys;
static const fit_keys growth_fit = {LW_FIELD_growth_bytes_per_step,
                                    LW_FIELD_growth_bytes_per_second, LW_FIELD_growth_slope_ci,
                                    LW_FIELD_growth_p_value};
static const fit_keys torch_fit = {LW_FIELD_torch_devices_bytes_per_step,
                                   LW_FIELD_torch_devices_bytes_per_second,
                                   LW_FIELD_torch_devices_slope_ci, LW_FIELD_torch_devices_p_value};

static void emit_fit(lw_jw *w, const fit_keys *k, const lw_growth *l) {
    lw_jw_double(w, lw_report_field_key(k->per_step), l->slope);
    lw_jw_double(w, lw_report_field_key(k->per_second), l->bytes_per_second);
    lw_jw_double_pair(w, lw_report_field_key(k->ci), l->lo, l->hi);
    lw_jw_double(w, lw_report_field_key(k->p_value), l->p_value);
}

/* Growth released at each cycle's end (cycles.h): null unless two cycles or
 * more were seen in the series the verdict comes from. */
static void emit_cycles(lw_jw *w, const lw_growth_state *g) {
    lw_cycles_summary c;
    if (!g->cycles_signal || !lw_cycles_get(&g->cycles_raw, &c)) {
        lw_jw_null(w, LW_KEY(growth_cycles));
        return;
    }
    lw_jw_object(w, LW_KEY(growth_cycles));
    lw_jw_uint(w, LW_KEY(growth_cycles_count), c.count);
    lw_jw_double(w, LW_KEY(growth_cycles_period_steps), c.period);
    lw_jw_double(w, LW_KEY(growth_cycles_rise_bytes_per_step), c.rise_per_step);
    lw_jw_double(w, LW_KEY(growth_cycles_peak_bytes), c.peak);
    lw_jw_double(w, LW_KEY(growth_cycles_floor_bytes), c.floor);
    lw_jw_double(w, LW_KEY(growth_cycles_last_release_step), c.last_release);
    lw_jw_str(w, LW_KEY(growth_cycles_signal), g->cycles_signal);
    lw_jw_end(w);
}

/* The live alarm (issue 38): whether the growth is said as a leak while the
 * run goes on, and the LEAK lines said live and withdrawn later. */
static void emit_live_alarms(lw_jw *w, const lw_growth_state *g) {
    lw_jw_bool(w, LW_KEY(growth_growing_not_yet_leak), g->growing);
    lw_withdrawn_alarm a;
    unsigned n = lw_warning_withdrawn(&a);
    lw_jw_uint(w, LW_KEY(growth_live_alarms_withdrawn), n);
    if (!n) {
        lw_jw_null(w, LW_KEY(growth_live_alarm_withdrawn));
        return;
    }
    lw_jw_object(w, LW_KEY(growth_live_alarm_withdrawn));
    lw_jw_str(w, LW_KEY(growth_live_alarm_withdrawn_unit), a.unit);
    lw_jw_uint(w, LW_KEY(growth_live_alarm_withdrawn_said_at), a.said_at);
    lw_jw_uint(w, LW_KEY(growth_live_alarm_withdrawn_withdrawn_at), a.withdrawn_at);
    lw_jw_str(w, LW_KEY(growth_live_alarm_withdrawn_reason), a.reason);
    lw_jw_end(w);
}

/* What one step is (answer.h, lw_answer_step_unit), and for module calls
 * the module's class; and the growth per second beside the growth per step
 * (bytes_per_second) already in the fit. */
static void emit_step_unit(lw_jw *w, const lw_growth_state *g) {
    char module[128];
    lw_jw_str(w, LW_KEY(growth_step_unit), lw_answer_step_unit(g, module, sizeof module));
    if (module[0])
        lw_jw_str(w, LW_KEY(growth_step_module), module);
    else
        lw_jw_null(w, LW_KEY(growth_step_module));
}

/* Which kind of memory the verdict is about (device, or pinned host memory
 * when its leak is the run's), and for pinned host memory the host's
 * memory it runs out of (what oom_eta_* count against). */
static void emit_memory_kind(lw_jw *w, const lw_growth_state *g) {
    lw_jw_str(w, LW_KEY(growth_memory_kind), g->memory_kind ? g->memory_kind : "device");
    emit_opt_int(w, LW_KEY(growth_host_available_bytes), g->host_available);
    emit_opt_int(w, LW_KEY(growth_host_total_bytes), g->host_total);
}

static void emit_growth(lw_jw *w, const lw_growth_state *g) {
    const lw_growth *l = &g->last;
    int leak = g->verdict == LW_VERDICT_LEAK;
    lw_jw_object(w, LW_KEY(growth));
    emit_fit(w, &growth_fit, l);
    lw_jw_uint(w, LW_KEY(growth_steps), g->steps);
    lw_jw_str(w, LW_KEY(growth_step_source), g->step_source);
    emit_step_unit(w, g);
    lw_jw_str(w, LW_KEY(growth_signal), g->signal);
    emit_opt_int(w, LW_KEY(growth_signal_device), g->signal_device);
    if (leak)
        lw_jw_double(w, LW_KEY(growth_onset_step), l->onset_x);
    else
        lw_jw_null(w, LW_KEY(growth_onset_step));
    /* The steps the onset's bin covers (the onset is known to a bin). */
    if (leak && isfinite(l->onset_lo) && isfinite(l->onset_hi) && l->onset_hi >= l->onset_lo)
        lw_jw_double_pair(w, LW_KEY(growth_onset_range), l->onset_lo, l->onset_hi);
    else
        lw_jw_null(w, LW_KEY(growth_onset_range));
    emit_opt_int(w, LW_KEY(growth_first_leak_step), g->first_leak_step);
    double eta_s, eta_steps;
    lw_growth_oom(g, &eta_s, &eta_steps);
    lw_jw_double(w, LW_KEY(growth_oom_eta_seconds), eta_s);
    lw_jw_double(w, LW_KEY(growth_oom_eta_steps), eta_steps);
    emit_opt_int(w, LW_KEY(growth_device_free_bytes), g->device_free);
    emit_opt_int(w, LW_KEY(growth_device_total_bytes), g->device_total);
    emit_memory_kind(w, g);
    if (!strcmp(g->step_source, "time"))
        lw_jw_double(w, LW_KEY(growth_interval_seconds), g->interval_s);
    lw_jw_uint(w, LW_KEY(growth_evaluations), g->evaluations);
    lw_jw_uint(w, LW_KEY(growth_leak_verdicts_withdrawn), g->withdrawn);
    emit_live_alarms(w, g);
    /* The end of the run: memory released after the last step (teardown)
     * does not erase growth before it; a decided fit is reported decided. */
    lw_jw_bool(w, LW_KEY(growth_released_at_exit), g->released_bytes >= 0);
    if (g->released_bytes >= 0)
        lw_jw_int(w, LW_KEY(growth_released_at_exit_bytes), g->released_bytes);
    else
        lw_jw_null(w, LW_KEY(growth_released_at_exit_bytes));
    lw_jw_bool(w, LW_KEY(growth_decided_at_exit), g->decided_at_exit);
    /* A marked run's phases without step marks (a validation loop): their
     * time intervals, and whether they gave the verdict (in intervals). */
    lw_jw_uint(w, LW_KEY(growth_unmarked_intervals), g->unmarked_intervals);
    lw_jw_bool(w, LW_KEY(growth_verdict_from_unmarked_phases), g->from_unmarked);
    lw_jw_int(w, LW_KEY(growth_window_bins), l->window);
    lw_jw_uint(w, LW_KEY(growth_steps_per_bin), g->bin_width);
    lw_jw_str(w, LW_KEY(growth_reason), g->reason[0] ? g->reason : "not evaluated yet");
    /* What the run can see: the floor's noise at this bin width, the
     * smallest rate it can call now, and the steps still needed to decide
     * at the current rate (0 once a leak is called; null when nothing
     * grows). */
    lw_jw_double(w, LW_KEY(growth_noise_bytes), l->noise_step);
    lw_jw_double(w, LW_KEY(growth_bin_noise_bytes), l->noise_bin);
    lw_jw_double(w, LW_KEY(growth_detectable_bytes_per_step), l->min_rate);
    lw_jw_double(w, LW_KEY(growth_steps_to_decide), leak ? 0.0 : l->more_steps);
    lw_jw_double(w, LW_KEY(growth_recent_p_value), l->p_recent);
    /* The guard that overruled a significant trend, and its test. */
    if (l->overruled_by) {
        lw_jw_str(w, LW_KEY(growth_overruled_by), l->overruled_by);
        lw_jw_double(w, LW_KEY(growth_overrule_p_value), l->guard_p);
    } else {
        lw_jw_null(w, LW_KEY(growth_overruled_by));
        lw_jw_null(w, LW_KEY(growth_overrule_p_value));
    }
    emit_cycles(w, g);
    emit_pinned_host(w);
    lw_jw_end(w);
}

/* PyTorch's own view, when its helper reported one: the tensor series per
 * device with its verdict and out-of-memory projection, and what the helper
 * handed over (diagnosis window, backend, steps). Absent otherwise. */
#define TORCH_DEVICES_SHOWN 8
typedef struct {
    lw_torch_device_state t[TORCH_DEVICES_SHOWN];
    lw_bin bins[TORCH_DEVICES_SHOWN * TORCH_BINS];
    int nb[TORCH_DEVICES_SHOWN];
} torch_view;

static void emit_torch(lw_jw *w) {
    /* Not static: several threads may write reports at once. */
    torch_view *v = malloc(sizeof *v);
    if (!v) return;
    const lw_torch_device_state *t = v->t;
    const lw_bin *bins = v->bins;
    const int *nb = v->nb;
    int n = lw_growth_torch_get(v->t, TORCH_DEVICES_SHOWN, v->bins, TORCH_BINS, v->nb);
    if (!n && !lw_torch_info_present()) {
        free(v);
        return;
    }
    lw_jw_object(w, LW_KEY(torch));
    lw_jw_str(w, LW_KEY(torch_mode), lw_opt_str(LW_OPT_TORCH_MODE));
    lw_jw_array(w, LW_KEY(torch_devices));
    for (int i = 0; i < n; i++) {
        const lw_torch_device_state *d = &t[i];
        const lw_growth *l = &d->last;
        int leak = d->verdict == LW_VERDICT_LEAK;
        lw_jw_object(w, NULL);
        lw_jw_int(w, LW_KEY(torch_devices_device), d->device);
        lw_jw_str(w, LW_KEY(torch_devices_verdict), lw_verdict_name(d->verdict));
        lw_jw_str(w, LW_KEY(torch_devices_signal), "torch_allocated");
        emit_fit(w, &torch_fit, l);
        if (leak)
            lw_jw_double(w, LW_KEY(torch_devices_onset_step), l->onset_x);
        else
            lw_jw_null(w, LW_KEY(torch_devices_onset_step));
        emit_opt_int(w, LW_KEY(torch_devices_first_leak_step), d->first_leak_step);
        lw_jw_uint(w, LW_KEY(torch_devices_points), d->points);
        lw_jw_int(w, LW_KEY(torch_devices_allocated_bytes), d->allocated);
        lw_jw_int(w, LW_KEY(torch_devices_reserved_bytes), d->reserved);
        emit_opt_int(w, LW_KEY(torch_devices_device_free_bytes), d->device_free);
        int64_t avail = available_of(d);
        emit_opt_int(w, LW_KEY(torch_devices_available_bytes), avail);
        /* The projection's one computation (lw_answer_oom), on what PyTorch
         * can still use. */
        double eta_s = NAN, eta_steps = NAN;
        if (leak) lw_answer_oom((double)avail, l->bytes_per_second, l->slope, &eta_s, &eta_steps);
        lw_jw_double(w, LW_KEY(torch_devices_oom_eta_steps), eta_steps);
        lw_jw_double(w, LW_KEY(torch_devices_oom_eta_seconds), eta_s);
        lw_jw_str(w, LW_KEY(torch_devices_reason), d->reason[0] ? d->reason : "not evaluated yet");
        const lw_bin *b = bins + (size_t)i * TORCH_BINS;
        emit_bins(w, b, nb[i], COLUMNS(torch_columns));
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_torch_info_emit_fields(w);
    lw_jw_end(w);
    free(v);
}

static void emit_command(lw_jw *w) {
    char buf[4096];
    size_t n = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
            n += (size_t)r;
        close(fd);
    }
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0') buf[i] = ' ';
    lw_jw_strn(w, LW_KEY(command), n ? buf : NULL, n);
}

/* Which process of a distributed job this is, on which device, and where its
 * final report goes (for 'leakwatch top' when the job ends): the caller's
 * report_path (report_file.c knows it; this file calls no file code). */
static void emit_rank(lw_jw *w, const char *report_path) {
    lw_rank_info r;
    lw_rank_get(&r);
    emit_opt_int(w, LW_KEY(rank), r.rank);
    emit_opt_int(w, LW_KEY(local_rank), r.local_rank);
    emit_opt_int(w, LW_KEY(world_size), r.world_size);
    lw_jw_str(w, LW_KEY(rank_source), lw_rank_source_name(&r));
    /* The device this process uses: the current one, else the one that held
     * the most memory. */
    int dev = lw_device_current();
    if (dev < 0) {
        int64_t best = -1;
        uint64_t seen = lw_totals_devices_seen();
        for (int d = 0; d < LW_MAX_DEVICES; d++) {
            if (!(seen & (1ull << (d + 1)))) continue;
            lw_counts c = lw_totals_get(d, LW_KIND_COUNT);
            if (c.peak_live_bytes > best) best = c.peak_live_bytes, dev = d;
        }
    }
    emit_opt_int(w, LW_KEY(device), dev);
    lw_jw_str(w, LW_KEY(report_path), report_path && report_path[0] ? report_path : NULL);
}

/* "answer": the site the answer names (answer.c) and its place to look (the
 * same as that site's own "where"); under PyTorch's signal, the first site
 * found in its allocation history, as the helper described it; then the
 * answer's line, whole (lw_run_answer_emit). With no site to list, only
 * the line. */
static void emit_answer(lw_jw *w, lw_symtab *syms, const lw_growth_state *g,
                        const lw_run_answer *ans, const lw_site *top, int top_distinct) {
    const char *kind = g->verdict == LW_VERDICT_LEAK && g->memory_kind ? g->memory_kind : NULL;
    lw_jw_object(w, LW_KEY(answer));
    if (ans->torch && lw_torch_info_answer_members(w)) {
        lw_jw_str(w, LW_KEY(answer_kind), kind);
    } else if (ans->entry) {
        const lw_site *named = ans->entry;
        lw_site_frames l;
        lw_site_frames_collect(&l, syms, named);
        lw_jw_uint(w, LW_KEY(answer_site), named->id);
        /* Not decided yet: whether the named site is one that grows. */
        if (g->verdict == LW_VERDICT_INCONCLUSIVE)
            lw_jw_bool(w, LW_KEY(answer_grows), ans->a.where_grows);
        lw_jw_str(w, LW_KEY(answer_kind), kind);
        emit_where(w, LW_FIELD_answer_where, &l,
                   named == top ? top_distinct : lw_site_distinct(syms, g, named));
        lw_site_frames_free(&l);
    } else {
        lw_jw_str(w, LW_KEY(answer_kind), kind);
    }
    lw_run_answer_emit(w, ans);
    lw_jw_end(w);
}

/* Set by the end-signal thread, read by whichever thread writes a report
 * (a snapshot on the control thread at the same moment: ThreadSanitizer). */
static _Atomic(const char *) end_signal;

void lw_report_set_end_signal(const char *name) {
    atomic_store_explicit(&end_signal, name, memory_order_release);
}

static _Atomic int attached_session;

void lw_report_set_attached(int attached) {
    attached_session = attached;
}

/* growth.reason of a "nothing_seen" report: why, and what to do. */
#define NOTHING_SEEN_REASON                                                                        \
    "no CUDA allocation seen since the attach (calls through pointers looked up before it "        \
    "are not seen): start the job under 'leakwatch run'"

int lw_report_emit(FILE *f, const char *reason, const char *report_path) {
    lw_jw w;
    lw_jw_init(&w, f, 1);
    /* Gathered and written in large pieces: the report's stream is
     * unbuffered (atomic_file.c says why). */
    char *wbuf = malloc(REPORT_WRITE_BUF);
    lw_jw_buffer(&w, wbuf, wbuf ? REPORT_WRITE_BUF : 0);
    lw_symtab *syms = lw_symtab_new();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t now = lw_run_now_ns();
    double uptime = (double)(now - lw_start_time_ns()) / 1e9;

    lw_jw_object(&w, NULL);
    lw_jw_str(&w, LW_KEY(tool), "leakwatch");
    lw_jw_str(&w, LW_KEY(version), LEAKWATCH_VERSION);
    lw_jw_int(&w, LW_KEY(pid), getpid());
    emit_command(&w);
    lw_jw_str(&w, LW_KEY(host), host);
    emit_rank(&w, report_path);
    lw_jw_str(&w, LW_KEY(reason), reason);
    const char *signame = atomic_load_explicit(&end_signal, memory_order_acquire);
    if (signame && !strcmp(reason, "signal")) lw_jw_str(&w, LW_KEY(end_signal), signame);
    lw_jw_int(&w, LW_KEY(written_at), (int64_t)time(NULL));
    lw_jw_double(&w, LW_KEY(duration_s), uptime);
    /* Its own copy: reports may be written from several threads at once
     * (a snapshot while the exit report is written). */
    lw_bin *bins = calloc(300, sizeof *bins);
    int nbins = 0;
    lw_growth_state g;
    lw_growth_get(&g, bins, bins ? 300 : 0, &nbins);
    lw_counts seen = lw_totals_get(-2, LW_KIND_COUNT);
    if (atomic_load(&attached_session) && !seen.alloc_count && !seen.failed_count) {
        /* Nothing to judge: a flat floor of nothing is not "no leak". */
        g.verdict = LW_VERDICT_NOTHING_SEEN;
        snprintf(g.reason, sizeof g.reason, "%s", NOTHING_SEEN_REASON);
    }
    lw_jw_str(&w, LW_KEY(verdict), lw_verdict_name(g.verdict));
    /* What fills the device by role, and the post-mortem of an
     * out-of-memory (anatomy.h). */
    lw_anatomy_emit(&w);
    emit_totals(&w);
    emit_growth(&w, &g);
    /* The floor and peak per step, downsampled. */
    emit_bins(&w, bins, nbins, COLUMNS(run_columns));
    emit_torch(&w);
    /* The sites ranked once: the report writes them in this order, with
     * the counters read for it, and the answer (answer.c, the one rule
     * every output follows) is built, whole, from the same list before
     * anything of it is written. */
    lw_site_views vs;
    lw_site_views_load(&vs, g.verdict == LW_VERDICT_LEAK);
    size_t nranked = 0;
    lw_ranked_site *ranked = lw_sites_ranked(&vs, &nranked);
    lw_run_answer ans;
    lw_run_answer_ranked(&ans, &g, ranked, nranked);
    int top_distinct = emit_sites(&w, syms, &vs, ranked, nranked);
    const lw_site *top = nranked && ranked ? ranked[0].site : NULL;
    free(ranked);
    lw_site_views_free(&vs);
    /* The exit summary renders this answer. */
    lw_run_answer_keep(&ans);
    emit_answer(&w, syms, &g, &ans, top, top_distinct);
    emit_failures(&w);
    lw_jw_object(&w, LW_KEY(tracker));
    lw_jw_uint(&w, LW_KEY(tracker_live_records), lw_live_records());
    lw_jw_uint(&w, LW_KEY(tracker_overhead_bytes), lw_live_overhead_bytes());
    lw_jw_uint(&w, LW_KEY(tracker_untracked_allocations), lw_record_untracked());
    lw_jw_uint(&w, LW_KEY(tracker_pooled_allocations), lw_sites_pooled());
    lw_jw_uint(&w, LW_KEY(tracker_reused_without_free), lw_record_reused_unseen());
    lw_jw_uint(&w, LW_KEY(tracker_truncated_stacks), lw_record_truncated_sites());
    lw_stack_stats ss;
    lw_stack_get_stats(&ss);
    lw_jw_bool(&w, LW_KEY(tracker_stacks), lw_opt_int(LW_OPT_STACKS) != 0);
    lw_jw_str(&w, LW_KEY(tracker_unwinder), ss.unwinder);
    lw_jw_uint(&w, LW_KEY(tracker_stacks_by_fallback_unwinder), ss.fallback);
    lw_jw_uint(&w, LW_KEY(tracker_stacks_verified), ss.verified);
    lw_jw_uint(&w, LW_KEY(tracker_stack_mismatches), ss.mismatches);
    lw_jw_uint(&w, LW_KEY(tracker_guessed_target_calls), lw_real_guessed_calls());
    lw_jw_end(&w);
    lw_jw_end(&w);
    lw_jw_flush(&w);
    fputc('\n', f);
    free(bins);
    lw_symtab_free(syms);
    int failed = lw_jw_failed(&w);
    free(wbuf);
    return failed ? -1 : 0;
}
