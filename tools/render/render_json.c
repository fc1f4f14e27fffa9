/* SPDX-License-Identifier: Apache-2.0 */
/* 'leakwatch report --format json': the report as the model understood it.
 * Every known field is present (null when unknown), unknown fields are
 * dropped, numbers are plain. Scripts can rely on this shape for any report
 * version, which they cannot do with the raw file. */
#include "render.h"

#include "json_write.h"

#include <math.h>
#include <string.h>

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

/* The fields of fs (model.h) of the struct at base, in their order. */
static void fields(lw_jw *w, const void *base, const lw_m_fields *fs) {
    for (size_t i = 0; i < fs->n; i++) {
        const lw_m_field *f = &fs->f[i];
        const char *at = (const char *)base + f->offset;
        if (f->type == LW_MF_NUM) {
            double v;
            memcpy(&v, at, sizeof v);
            num(w, f->key, v);
        } else if (f->type == LW_MF_STR) {
            const char *v;
            memcpy(&v, at, sizeof v);
            lw_jw_str(w, f->key, v);
        } else {
            int v;
            memcpy(&v, at, sizeof v);
            tri(w, f->key, v);
        }
    }
}

static void counts(lw_jw *w, const lw_m_counts *c) {
    fields(w, c, &lw_m_counts_fields);
}

static void by_kind(lw_jw *w, const lw_m_counts *bk) {
    lw_jw_object(w, "by_kind");
    for (int k = 0; k < LW_KIND_COUNT; k++) {
        lw_jw_object(w, lw_kind_name((lw_kind)k));
        counts(w, &bk[k]);
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

/* [lo, hi] when known, else null. */
static void range(lw_jw *w, const char *key, int known, double lo, double hi) {
    if (!known) {
        lw_jw_null(w, key);
        return;
    }
    lw_jw_array(w, key);
    num(w, NULL, lo);
    num(w, NULL, hi);
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

static void shown(lw_jw *w, const lw_model *m, const char *object);

/* The anatomy by role and the out-of-memory post-mortem (null when the
 * report has none). */
static void anatomy_oom(lw_jw *w, const lw_model *m) {
    if (m->anatomy_method) {
        lw_jw_object(w, "anatomy");
        lw_jw_str(w, "method", m->anatomy_method);
        lw_jw_str(w, "note", m->anatomy_note);
        lw_jw_array(w, "devices");
        for (size_t i = 0; i < m->nanatomy; i++) {
            const lw_m_anatomy *a = &m->anatomy[i];
            lw_jw_object(w, NULL);
            num(w, "device", a->device);
            num(w, "total_bytes", a->total_bytes);
            num(w, "at_step", a->at_step);
            for (int p = 0; p < 2; p++) {
                lw_jw_object(w, p ? "peak" : "now");
                for (int k = 0; k < LW_ROLES; k++)
                    num(w, lw_model_role_names[k], p ? a->peak[k] : a->now[k]);
                lw_jw_end(w);
            }
            lw_jw_end(w);
        }
        lw_jw_end(w);
        lw_jw_end(w);
    } else {
        lw_jw_null(w, "anatomy");
    }
    const lw_m_oom *o = &m->oom;
    if (!o->have) {
        lw_jw_null(w, "oom");
        return;
    }
    lw_jw_object(w, "oom");
    shown(w, m, "oom");
    lw_jw_end(w);
}

/* The plain members of the object at path object ("" the top level,
 * "growth", "oom") that the report's table of fields flags LW_RF_SHOWN
 * (report_fields.def), in the table's order, as the model read them: a row
 * flagged there is written here with no change to this file. The members
 * that are not plain values, and the file's own name, are written by name. */
static void shown(lw_jw *w, const lw_model *m, const char *object) {
    const lw_m_growth *g = &m->growth;
    for (int i = 0; i < LW_FIELD_COUNT; i++) {
        lw_field f = (lw_field)i;
        unsigned t = lw_report_fields[i].types;
        if (!(lw_report_fields[i].flags & LW_RF_SHOWN) || !lw_report_field_in(f, object)) continue;
        const char *key = lw_report_field_key(f);
        if (f == LW_FIELD_verdict) /* only a verdict the command knows */
            lw_jw_str(w, key,
                      m->verdict == LW_VERDICT_UNKNOWN ? NULL : lw_verdict_name(m->verdict));
        else if (f == LW_FIELD_growth_slope_ci)
            range(w, key, isfinite(g->ci_lo), g->ci_lo, g->ci_hi);
        else if (f == LW_FIELD_growth_onset_range)
            range(w, key, isfinite(g->onset_lo) && isfinite(g->onset_hi), g->onset_lo, g->onset_hi);
        else if (t & LW_RF_NUM)
            num(w, key, lw_model_num(m, f));
        else if (t & LW_RF_STR)
            lw_jw_str(w, key, lw_model_str(m, f));
        else if (t & LW_RF_BOOL)
            tri(w, key, lw_model_bool(m, f));
        if (f == LW_FIELD_version) lw_jw_str(w, "file", m->path); /* the report read */
    }
}

static void one(lw_jw *w, const lw_model *m) {
    lw_jw_object(w, NULL);
    shown(w, m, "");

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
    shown(w, m, "growth");
    lw_jw_end(w);

    anatomy_oom(w, m);

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
        fields(w, s, &lw_m_site_fields);
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
            lw_jw_object(w, NULL);
            fields(w, &s->frames[j], &lw_m_frame_fields);
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
        lw_jw_object(w, NULL);
        fields(w, &m->failures[i], &lw_m_failure_fields);
        lw_jw_end(w);
    }
    lw_jw_end(w);
    const lw_m_site *top = lw_model_top_site(m);
    if (top) {
        char where[512];
        lw_jw_object(w, "answer");
        num(w, "site", top->id);
        lw_jw_str(w, "kind",
                  m->verdict == LW_VERDICT_LEAK ? (g->memory_kind ? g->memory_kind : "device")
                                                : NULL);
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
