/* SPDX-License-Identifier: Apache-2.0 */
/* 'leakwatch report --format json': the report as the model understood it.
 * Every known field is present (null when unknown), unknown fields are
 * dropped, numbers are plain. Scripts can rely on this shape for any report
 * version, which they cannot do with the raw file. */
#include "render.h"

#include "json_write.h"

#include <math.h>

static void num(lw_jw *w, const char *key, double v) {
    if (!isfinite(v))
        lw_jw_null(w, key);
    else if (v == floor(v) && fabs(v) < 9e15)
        lw_jw_int(w, key, (int64_t)v);
    else
        lw_jw_double(w, key, v);
}

static void tri(lw_jw *w, const char *key, int v) {
    if (v < 0)
        lw_jw_null(w, key);
    else
        lw_jw_bool(w, key, v);
}

static void counts(lw_jw *w, const lw_m_counts *c) {
    num(w, "alloc_count", c->alloc_count);
    num(w, "free_count", c->free_count);
    num(w, "failed_alloc_count", c->failed_alloc_count);
    num(w, "live_bytes", c->live_bytes);
    num(w, "live_count", c->live_count);
    num(w, "peak_live_bytes", c->peak_live_bytes);
}

static void by_kind(lw_jw *w, const lw_m_counts *bk) {
    lw_jw_object(w, "by_kind");
    for (int k = 0; k < LW_KINDS; k++) {
        lw_jw_object(w, lw_model_kind_names[k]);
        counts(w, &bk[k]);
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

static void series(lw_jw *w, const char *key, const double *v, size_t n) {
    lw_jw_array(w, key);
    for (size_t i = 0; i < n; i++)
        num(w, NULL, v[i]);
    lw_jw_end(w);
}

/* The tracker's counters are passed through: numbers only. */
static void tracker(lw_jw *w, const lw_json *t) {
    lw_jw_object(w, "tracker");
    for (size_t i = 0; i < lw_json_len(t); i++) {
        const lw_json *v = lw_json_value_at(t, i);
        if (lw_json_type_of(v) == LW_JSON_NUMBER)
            num(w, lw_json_key_at(t, i), lw_json_number(v, NAN));
    }
    lw_jw_end(w);
}

static void one(lw_jw *w, const lw_model *m) {
    lw_jw_object(w, NULL);
    lw_jw_str(w, "tool", "leakwatch");
    lw_jw_str(w, "version", m->version);
    lw_jw_str(w, "file", m->path);
    num(w, "pid", m->pid);
    num(w, "rank", m->rank);
    num(w, "local_rank", m->local_rank);
    num(w, "world_size", m->world_size);
    num(w, "device", m->device);
    lw_jw_str(w, "report_path", m->report_path);
    lw_jw_str(w, "command", m->command);
    lw_jw_str(w, "host", m->host);
    lw_jw_str(w, "reason", m->reason);
    num(w, "written_at", m->written_at);
    num(w, "duration_s", m->duration_s);
    lw_jw_str(w, "verdict", m->verdict == LW_MV_UNKNOWN ? NULL : lw_mverdict_name(m->verdict));

    lw_jw_object(w, "totals");
    counts(w, &m->totals);
    num(w, "unknown_free_count", m->unknown_free_count);
    num(w, "mapped_bytes", m->mapped_bytes);
    if (m->have_imported) {
        lw_jw_object(w, "imported");
        counts(w, &m->imported);
        num(w, "mapped_bytes", m->imported_mapped_bytes);
        lw_jw_end(w);
    }
    by_kind(w, m->by_kind);
    lw_jw_array(w, "by_device");
    for (size_t i = 0; i < m->ndevices; i++) {
        lw_jw_object(w, NULL);
        num(w, "device", m->devices[i].device);
        counts(w, &m->devices[i].c);
        by_kind(w, m->devices[i].by_kind);
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_end(w);

    const lw_m_growth *g = &m->growth;
    lw_jw_object(w, "growth");
    num(w, "bytes_per_step", g->bytes_per_step);
    num(w, "bytes_per_second", g->bytes_per_second);
    num(w, "steps", g->steps);
    lw_jw_str(w, "step_source", g->step_source);
    num(w, "p_value", g->p_value);
    if (isfinite(g->ci_lo)) {
        lw_jw_array(w, "slope_ci");
        num(w, NULL, g->ci_lo);
        num(w, NULL, g->ci_hi);
        lw_jw_end(w);
    } else {
        lw_jw_null(w, "slope_ci");
    }
    num(w, "onset_step", g->onset_step);
    if (isfinite(g->onset_lo) && isfinite(g->onset_hi)) {
        lw_jw_array(w, "onset_range");
        num(w, NULL, g->onset_lo);
        num(w, NULL, g->onset_hi);
        lw_jw_end(w);
    } else {
        lw_jw_null(w, "onset_range");
    }
    num(w, "oom_eta_seconds", g->oom_eta_seconds);
    num(w, "oom_eta_steps", g->oom_eta_steps);
    num(w, "device_free_bytes", g->device_free_bytes);
    num(w, "device_total_bytes", g->device_total_bytes);
    lw_jw_end(w);

    lw_jw_object(w, "series");
    series(w, "x", m->sx, m->nseries);
    series(w, "time_s", m->st, m->nseries);
    series(w, "floor", m->sfloor, m->nseries);
    series(w, "peak", m->speak, m->nseries);
    lw_jw_end(w);

    num(w, "sites_total", m->sites_total);
    num(w, "sites_reported", m->sites_reported);
    lw_jw_array(w, "sites");
    for (size_t i = 0; i < m->nsites; i++) {
        const lw_m_site *s = &m->sites[i];
        lw_jw_object(w, NULL);
        num(w, "id", s->id);
        num(w, "rank", s->rank);
        num(w, "live_bytes", s->live_bytes);
        num(w, "live_count", s->live_count);
        num(w, "alloc_count", s->alloc_count);
        num(w, "alloc_bytes", s->alloc_bytes);
        num(w, "free_count", s->free_count);
        num(w, "failed_alloc_count", s->failed_alloc_count);
        tri(w, "leak", s->leak);
        num(w, "bytes_per_step", s->bytes_per_step);
        tri(w, "pooled", s->pooled);
        char where[512];
        int k = lw_model_where(s, where, sizeof where);
        if (k >= 0) {
            lw_jw_object(w, "where");
            lw_jw_int(w, "frame", k);
            lw_jw_str(w, "label", where);
            lw_jw_end(w);
        } else {
            lw_jw_null(w, "where");
        }
        lw_jw_array(w, "frames");
        for (size_t j = 0; j < s->nframes; j++) {
            const lw_m_frame *f = &s->frames[j];
            lw_jw_object(w, NULL);
            lw_jw_str(w, "kind", f->kind);
            lw_jw_str(w, "function", f->function);
            lw_jw_str(w, "file", f->file);
            num(w, "line", f->line);
            lw_jw_str(w, "module", f->module);
            lw_jw_str(w, "address", f->address);
            lw_jw_str(w, "offset", f->offset);
            lw_jw_end(w);
        }
        lw_jw_end(w);
        if (s->nseries) {
            lw_jw_object(w, "series");
            series(w, "x", s->series_x, s->nseries);
            series(w, "floor", s->series_floor, s->nseries);
            lw_jw_end(w);
        }
        lw_jw_end(w);
    }
    lw_jw_end(w);

    lw_jw_array(w, "failed_allocations");
    for (size_t i = 0; i < m->nfailures; i++) {
        const lw_m_failure *f = &m->failures[i];
        lw_jw_object(w, NULL);
        num(w, "size", f->size);
        lw_jw_str(w, "kind", f->kind);
        num(w, "device", f->device);
        num(w, "result", f->result);
        num(w, "step", f->step);
        num(w, "time_s", f->time_s);
        num(w, "site", f->site);
        lw_jw_end(w);
    }
    lw_jw_end(w);
    const lw_m_site *top = lw_model_top_site(m);
    if (top) {
        char where[512];
        lw_jw_object(w, "answer");
        num(w, "site", top->id);
        lw_model_where(top, where, sizeof where);
        lw_jw_object(w, "where");
        lw_jw_str(w, "label", where);
        lw_jw_end(w);
        lw_jw_end(w);
    } else {
        lw_jw_null(w, "answer");
    }
    tracker(w, m->tracker);
    lw_jw_end(w);
}

int lw_render_json(FILE *out, const lw_model *ms, size_t n) {
    lw_jw w;
    lw_jw_init(&w, out, 1);
    if (n != 1) lw_jw_array(&w, NULL);
    for (size_t i = 0; i < n; i++)
        one(&w, &ms[i]);
    if (n != 1) lw_jw_end(&w);
    fputc('\n', out);
    return lw_jw_failed(&w) ? -1 : 0;
}
