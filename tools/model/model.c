/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a report into lw_model: every field is looked up with its expected
 * type, and anything else becomes NAN/NULL plus a warning. The report format
 * grows (fields are added, never renamed), so absent optional fields are
 * silent; only fields every report has had since 0.1 are warned about. */
#include "model.h"

#include "cli.h"
#include "verdict.h"
#include "where.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Hostile files may hold millions of elements; a report never needs more. */
#define MAX_SITES 100000
#define MAX_FRAMES 1024
#define MAX_SERIES 1000000
#define MAX_FAILURES 100000
#define MAX_DEVICES 1024
#define MAX_WARNINGS 200

static void warn(lw_model *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(lw_model *m, const char *fmt, ...) {
    if (m->nwarnings >= MAX_WARNINGS) {
        m->nwarnings++; /* counted, not kept */
        return;
    }
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **w = realloc(m->warnings, (m->nwarnings + 1) * sizeof *w);
    if (!w) return;
    m->warnings = w;
    m->warnings[m->nwarnings++] = strdup(buf);
}

/* A number member: NAN when absent or null; NAN and a warning when of another
 * type or beyond the double range. */
static double num(lw_model *m, const lw_json *obj, const char *key, const char *where) {
    const lw_json *v = lw_json_get(obj, key);
    if (!v || lw_json_is_null(v)) return NAN;
    if (lw_json_type_of(v) != LW_JSON_NUMBER) {
        warn(m, "%s%s is a %s, expected a number; shown as unknown", where, key,
             lw_json_type_name(lw_json_type_of(v)));
        return NAN;
    }
    double d = lw_json_number(v, NAN);
    if (!isfinite(d)) {
        warn(m, "%s%s is out of range; shown as unknown", where, key);
        return NAN;
    }
    return d;
}

static const char *str(lw_model *m, const lw_json *obj, const char *key, const char *where) {
    const lw_json *v = lw_json_get(obj, key);
    if (!v || lw_json_is_null(v)) return NULL;
    if (lw_json_type_of(v) != LW_JSON_STRING) {
        warn(m, "%s%s is a %s, expected a string; ignored", where, key,
             lw_json_type_name(lw_json_type_of(v)));
        return NULL;
    }
    return lw_json_string(v);
}

static int boolean(lw_model *m, const lw_json *obj, const char *key, const char *where) {
    const lw_json *v = lw_json_get(obj, key);
    if (!v || lw_json_is_null(v)) return -1;
    if (lw_json_type_of(v) != LW_JSON_BOOL) {
        warn(m, "%s%s is a %s, expected true or false; shown as unknown", where, key,
             lw_json_type_name(lw_json_type_of(v)));
        return -1;
    }
    return lw_json_bool(v, 0);
}

/* A member that must be an object/array when present. */
static const lw_json *typed(lw_model *m, const lw_json *obj, const char *key, lw_json_type t,
                            const char *where) {
    const lw_json *v = lw_json_get(obj, key);
    if (!v || lw_json_is_null(v)) return NULL;
    if (lw_json_type_of(v) != t) {
        warn(m, "%s%s is a %s, expected %s %s; ignored", where, key,
             lw_json_type_name(lw_json_type_of(v)), t == LW_JSON_ARRAY ? "an" : "an",
             lw_json_type_name(t));
        return NULL;
    }
    return v;
}

static size_t capped_len(lw_model *m, const lw_json *arr, size_t cap, const char *what) {
    size_t n = lw_json_len(arr);
    if (n > cap) {
        warn(m, "%s has %zu entries; only the first %zu are used", what, n, cap);
        n = cap;
    }
    return n;
}

/* The plain members of the object obj at path object ("" the top level,
 * "growth") that the report's table lists (report_fields.def), each read
 * as its row's type says, with num/str/boolean's warnings, into m->field.
 * Members that are arrays or objects are read by their own code. */
static void read_members(lw_model *m, const lw_json *obj, const char *object, const char *where) {
    for (int i = 0; i < LW_FIELD_COUNT; i++) {
        lw_field f = (lw_field)i;
        unsigned t = lw_report_fields[i].types;
        if (!lw_report_field_in(f, object)) continue;
        lw_m_value *v = &m->field[i];
        v->num = NAN;
        v->str = NULL;
        v->b = -1;
        if (t & (LW_RF_ARR | LW_RF_OBJ)) continue;
        const char *key = lw_report_field_key(f);
        if (t & LW_RF_NUM)
            v->num = num(m, obj, key, where);
        else if (t & LW_RF_STR)
            v->str = str(m, obj, key, where);
        else if (t & LW_RF_BOOL)
            v->b = boolean(m, obj, key, where);
    }
}

static int plain_member(lw_field f) {
    return lw_report_field_plain(f);
}

/* Every slot unknown, before anything is read. */
static void clear_members(lw_model *m) {
    for (int i = 0; i < LW_FIELD_COUNT; i++)
        m->field[i] = (lw_m_value){NAN, NULL, -1};
}

/* The plain values the reader has no code for (torch's, growth.cycles',
 * growth.pinned_host's, the tracker's, ...), each by its row: a row added to
 * the table is read with no change here. An object on the way that is
 * absent or of another type leaves its members unknown, silently (older
 * reports, non-PyTorch jobs). */
static void read_other_members(lw_model *m) {
    for (int i = 0; i < LW_FIELD_COUNT; i++) {
        lw_field f = (lw_field)i;
        if (!lw_report_field_plain(f) || lw_report_field_in(f, "") ||
            lw_report_field_in(f, "growth") || lw_report_field_in(f, "oom"))
            continue;
        const char *path = lw_report_fields[i].path, *dot = strrchr(path, '.');
        char parent[160], where[170];
        snprintf(parent, sizeof parent, "%.*s", (int)(dot - path), path);
        snprintf(where, sizeof where, "%s.", parent);
        const lw_json *obj = lw_json_path(m->doc, parent);
        if (lw_json_type_of(obj) != LW_JSON_OBJECT) continue;
        unsigned t = lw_report_fields[i].types;
        lw_m_value *v = &m->field[i];
        if (t & LW_RF_NUM)
            v->num = num(m, obj, dot + 1, where);
        else if (t & LW_RF_STR)
            v->str = str(m, obj, dot + 1, where);
        else if (t & LW_RF_BOOL)
            v->b = boolean(m, obj, dot + 1, where);
    }
}

double lw_model_num(const lw_model *m, lw_field f) {
    return plain_member(f) ? m->field[f].num : NAN;
}

const char *lw_model_str(const lw_model *m, lw_field f) {
    return plain_member(f) ? m->field[f].str : NULL;
}

int lw_model_bool(const lw_model *m, lw_field f) {
    return plain_member(f) ? m->field[f].b : -1;
}

#define NUM(T, k)                                                                                  \
    { #k, LW_MF_NUM, offsetof(T, k) }
#define STR(T, k)                                                                                  \
    { #k, LW_MF_STR, offsetof(T, k) }
#define BOOL(T, k)                                                                                 \
    { #k, LW_MF_BOOL, offsetof(T, k) }
#define FIELDS(a)                                                                                  \
    { a, sizeof a / sizeof a[0] }
static const lw_m_field counts_f[] = {
    NUM(lw_m_counts, alloc_count),        NUM(lw_m_counts, free_count),
    NUM(lw_m_counts, failed_alloc_count), NUM(lw_m_counts, live_bytes),
    NUM(lw_m_counts, live_count),         NUM(lw_m_counts, peak_live_bytes)};
static const lw_m_field frame_f[] = {STR(lw_m_frame, kind),   STR(lw_m_frame, function),
                                     STR(lw_m_frame, file),   NUM(lw_m_frame, line),
                                     STR(lw_m_frame, module), STR(lw_m_frame, address),
                                     STR(lw_m_frame, offset)};
static const lw_m_field site_f[] = {NUM(lw_m_site, id),          NUM(lw_m_site, rank),
                                    NUM(lw_m_site, live_bytes),  NUM(lw_m_site, live_count),
                                    NUM(lw_m_site, alloc_count), NUM(lw_m_site, alloc_bytes),
                                    NUM(lw_m_site, free_count),  NUM(lw_m_site, failed_alloc_count),
                                    BOOL(lw_m_site, leak),       NUM(lw_m_site, bytes_per_step),
                                    BOOL(lw_m_site, pooled)};
static const lw_m_field failure_f[] = {NUM(lw_m_failure, size),   STR(lw_m_failure, kind),
                                       NUM(lw_m_failure, device), NUM(lw_m_failure, result),
                                       NUM(lw_m_failure, step),   NUM(lw_m_failure, time_s),
                                       NUM(lw_m_failure, site)};
const lw_m_fields lw_m_counts_fields = FIELDS(counts_f), lw_m_frame_fields = FIELDS(frame_f),
                  lw_m_site_fields = FIELDS(site_f), lw_m_failure_fields = FIELDS(failure_f);
#undef NUM
#undef STR
#undef BOOL
#undef FIELDS

/* The fields of fs from obj into the struct at base. */
static void read_fields(lw_model *m, const lw_json *obj, void *base, const lw_m_fields *fs,
                        const char *where) {
    for (size_t i = 0; i < fs->n; i++) {
        const lw_m_field *f = &fs->f[i];
        char *at = (char *)base + f->offset;
        if (f->type == LW_MF_NUM) {
            double v = num(m, obj, f->key, where);
            memcpy(at, &v, sizeof v);
        } else if (f->type == LW_MF_STR) {
            const char *v = str(m, obj, f->key, where);
            memcpy(at, &v, sizeof v);
        } else {
            int v = boolean(m, obj, f->key, where);
            memcpy(at, &v, sizeof v);
        }
    }
}

static void read_counts(lw_model *m, const lw_json *o, lw_m_counts *c, const char *where) {
    read_fields(m, o, c, &lw_m_counts_fields, where);
}

static void read_by_kind(lw_model *m, const lw_json *o, lw_m_counts *bk, const char *where) {
    const lw_json *byk = typed(m, o, "by_kind", LW_JSON_OBJECT, where);
    char w[200];
    for (int k = 0; k < LW_KIND_COUNT; k++) {
        snprintf(w, sizeof w, "%.150sby_kind.%s.", where, lw_kind_name((lw_kind)k));
        const lw_json *ko = typed(m, byk, lw_kind_name((lw_kind)k), LW_JSON_OBJECT, w);
        read_counts(m, ko, &bk[k], w);
    }
}

/* A numeric array of n values; non-numbers and missing entries (the array is
 * shorter than n) become NAN, with one warning per array for non-numbers. */
static double *num_array(lw_model *m, const lw_json *arr, size_t n, const char *what) {
    double *out = calloc(n ? n : 1, sizeof *out);
    int bad = 0;
    size_t have = lw_json_len(arr);
    for (size_t i = 0; out && i < n; i++) {
        const lw_json *v = i < have ? lw_json_at(arr, i) : NULL;
        out[i] = lw_json_type_of(v) == LW_JSON_NUMBER ? lw_json_number(v, NAN) : NAN;
        if (!isfinite(out[i])) out[i] = NAN, bad |= v && !lw_json_is_null(v);
    }
    if (bad) warn(m, "%s holds values that are not finite numbers; those points are skipped", what);
    return out;
}

/* A series: x and ykey arrays (the shorter length wins), optionally time_s
 * and peak of the same length (padded with NAN). Returns the point count. */
static size_t read_series(lw_model *m, const lw_json *s, const char *ykey, double **x, double **y,
                          double **t, double **y2, const char *where) {
    char what[200];
    const lw_json *ax = typed(m, s, "x", LW_JSON_ARRAY, where);
    const lw_json *ay = typed(m, s, ykey, LW_JSON_ARRAY, where);
    if (!ax || !ay) return 0;
    size_t n = lw_json_len(ax) < lw_json_len(ay) ? lw_json_len(ax) : lw_json_len(ay);
    if (lw_json_len(ax) != lw_json_len(ay))
        warn(m, "%sx and %s%s differ in length; the first %zu points are used", where, where, ykey,
             n);
    snprintf(what, sizeof what, "%.150sx", where);
    if (n > MAX_SERIES) n = capped_len(m, ax, MAX_SERIES, what);
    *x = num_array(m, ax, n, what);
    snprintf(what, sizeof what, "%.150s%s", where, ykey);
    *y = num_array(m, ay, n, what);
    if (t) {
        snprintf(what, sizeof what, "%.150stime_s", where);
        *t = num_array(m, typed(m, s, "time_s", LW_JSON_ARRAY, where), n, what);
    }
    if (y2) {
        snprintf(what, sizeof what, "%.150speak", where);
        *y2 = num_array(m, typed(m, s, "peak", LW_JSON_ARRAY, where), n, what);
    }
    if (!*x || !*y || (t && !*t) || (y2 && !*y2)) return 0;
    return n;
}

/* The objects of the array arr (the first cap), read into a new array of
 * items of size bytes: fs's fields, then more's (when given) with the item's
 * path ("where[i].") and index. An entry that is not an object is skipped,
 * with a warning when warn_skipped. *count: the items read. NULL when out of
 * memory. */
typedef void more_fields(lw_model *m, const lw_json *obj, void *item, size_t i, const char *w);
static void *read_objects(lw_model *m, const lw_json *arr, size_t cap, const char *where,
                          size_t size, const lw_m_fields *fs, int warn_skipped, more_fields *more,
                          size_t *count) {
    size_t n = capped_len(m, arr, cap, where);
    char *items = calloc(n ? n : 1, size);
    if (!items) return NULL;
    char w[200];
    for (size_t i = 0; i < n; i++) {
        const lw_json *o = lw_json_at(arr, i);
        snprintf(w, sizeof w, "%.150s[%zu].", where, i);
        if (lw_json_type_of(o) != LW_JSON_OBJECT) {
            if (warn_skipped)
                warn(m, "%s[%zu] is a %s, expected an object; skipped", where, i,
                     lw_json_type_name(lw_json_type_of(o)));
            continue;
        }
        void *item = items + (*count)++ * size;
        read_fields(m, o, item, fs, w);
        if (more) more(m, o, item, i, w);
    }
    return items;
}

/* A site's members beyond its fields: where, owner, frames and series. */
static void read_site_more(lw_model *m, const lw_json *so, void *item, size_t i, const char *w) {
    lw_m_site *s = item;
    s->where_frame = NAN;
    s->where_distinct = NAN;
    const lw_json *where = typed(m, so, "where", LW_JSON_OBJECT, w);
    if (where) {
        char ww[200];
        snprintf(ww, sizeof ww, "sites[%zu].where.", i);
        s->where_frame = num(m, where, "frame", ww);
        s->where_label = str(m, where, "label", ww);
        s->where_distinct = num(m, where, "distinct_frame", ww);
    }
    const lw_json *owner = typed(m, so, "owner", LW_JSON_OBJECT, w);
    if (owner) {
        char ow[200];
        snprintf(ow, sizeof ow, "sites[%zu].owner.", i);
        s->owner_text = str(m, owner, "text", ow);
    }
    char fw[200];
    snprintf(fw, sizeof fw, "sites[%zu].frames", i);
    s->frames = read_objects(m, typed(m, so, "frames", LW_JSON_ARRAY, w), MAX_FRAMES, fw,
                             sizeof *s->frames, &lw_m_frame_fields, 1, NULL, &s->nframes);
    char sw[200];
    snprintf(sw, sizeof sw, "sites[%zu].series.", i);
    const lw_json *ser = typed(m, so, "series", LW_JSON_OBJECT, w);
    if (ser)
        s->nseries = read_series(m, ser, "floor", &s->series_x, &s->series_floor, NULL, NULL, sw);
}

static void read_sites(lw_model *m, const lw_json *root) {
    m->sites = read_objects(m, typed(m, root, "sites", LW_JSON_ARRAY, ""), MAX_SITES, "sites",
                            sizeof *m->sites, &lw_m_site_fields, 1, read_site_more, &m->nsites);
}

/* A failure that is not an object is skipped without a warning. */
static void read_failures(lw_model *m, const lw_json *root) {
    m->failures = read_objects(m, typed(m, root, "failed_allocations", LW_JSON_ARRAY, ""),
                               MAX_FAILURES, "failed_allocations", sizeof *m->failures,
                               &lw_m_failure_fields, 0, NULL, &m->nfailures);
}

static void read_totals(lw_model *m, const lw_json *root) {
    const lw_json *t = typed(m, root, "totals", LW_JSON_OBJECT, "");
    m->have_totals = t != NULL;
    if (!t) warn(m, "no \"totals\" object; totals are shown as unknown");
    read_counts(m, t, &m->totals, "totals.");
    m->unknown_free_count = num(m, t, "unknown_free_count", "totals.");
    m->mapped_bytes = num(m, t, "mapped_bytes", "totals.");
    read_by_kind(m, t, m->by_kind, "totals.");
    const lw_json *imp = typed(m, t, "imported", LW_JSON_OBJECT, "totals.");
    m->have_imported = imp != NULL;
    read_counts(m, imp, &m->imported, "totals.imported.");
    m->imported_mapped_bytes = num(m, imp, "mapped_bytes", "totals.imported.");
    const lw_json *bd = typed(m, t, "by_device", LW_JSON_ARRAY, "totals.");
    size_t n = capped_len(m, bd, MAX_DEVICES, "totals.by_device");
    m->devices = calloc(n ? n : 1, sizeof *m->devices);
    char w[200];
    for (size_t i = 0; m->devices && i < n; i++) {
        const lw_json *d = lw_json_at(bd, i);
        if (lw_json_type_of(d) != LW_JSON_OBJECT) continue;
        snprintf(w, sizeof w, "totals.by_device[%zu].", i);
        lw_m_device *o = &m->devices[m->ndevices++];
        o->device = num(m, d, "device", w);
        read_counts(m, d, &o->c, w);
        read_by_kind(m, d, o->by_kind, w);
    }
}

static void read_growth(lw_model *m, const lw_json *root) {
    const lw_json *g = typed(m, root, "growth", LW_JSON_OBJECT, "");
    lw_m_growth *o = &m->growth;
    /* Its plain members by the table's rows; these named copies are what the
     * renderers read. */
    read_members(m, g, "growth", "growth.");
    o->bytes_per_step = lw_model_num(m, LW_FIELD_growth_bytes_per_step);
    o->bytes_per_second = lw_model_num(m, LW_FIELD_growth_bytes_per_second);
    o->steps = lw_model_num(m, LW_FIELD_growth_steps);
    o->p_value = lw_model_num(m, LW_FIELD_growth_p_value);
    o->onset_step = lw_model_num(m, LW_FIELD_growth_onset_step);
    o->oom_eta_seconds = lw_model_num(m, LW_FIELD_growth_oom_eta_seconds);
    o->oom_eta_steps = lw_model_num(m, LW_FIELD_growth_oom_eta_steps);
    o->device_free_bytes = lw_model_num(m, LW_FIELD_growth_device_free_bytes);
    o->device_total_bytes = lw_model_num(m, LW_FIELD_growth_device_total_bytes);
    o->step_source = lw_model_str(m, LW_FIELD_growth_step_source);
    o->step_unit = lw_model_str(m, LW_FIELD_growth_step_unit);
    o->memory_kind = lw_model_str(m, LW_FIELD_growth_memory_kind);
    o->host_available_bytes = lw_model_num(m, LW_FIELD_growth_host_available_bytes);
    o->host_total_bytes = lw_model_num(m, LW_FIELD_growth_host_total_bytes);
    o->onset_lo = o->onset_hi = NAN;
    const lw_json *range = g ? lw_json_get(g, "onset_range") : NULL;
    if (range && lw_json_type_of(range) == LW_JSON_ARRAY && lw_json_len(range) == 2) {
        o->onset_lo = lw_json_number(lw_json_at(range, 0), NAN);
        o->onset_hi = lw_json_number(lw_json_at(range, 1), NAN);
    }
    o->ci_lo = o->ci_hi = NAN;
    const lw_json *ci = typed(m, g, "slope_ci", LW_JSON_ARRAY, "growth.");
    if (ci) {
        if (lw_json_len(ci) == 2) {
            o->ci_lo = lw_json_number(lw_json_at(ci, 0), NAN);
            o->ci_hi = lw_json_number(lw_json_at(ci, 1), NAN);
            if (!isfinite(o->ci_lo) || !isfinite(o->ci_hi)) o->ci_lo = o->ci_hi = NAN;
        } else {
            warn(m, "growth.slope_ci has %zu entries, expected 2 ([low, high]); ignored",
                 lw_json_len(ci));
        }
    }
}

const char *const lw_model_role_names[LW_ROLES] = {"weights",     "gradients",   "optimizer_state",
                                                   "activations", "cached_free", "outside_pytorch",
                                                   "leak"};
const char *const lw_model_role_labels[LW_ROLES] = {"weights",     "gradients",   "optimizer state",
                                                    "activations", "cached free", "outside PyTorch",
                                                    "leak"};

static void read_roles(lw_model *m, const lw_json *o, double *out, const char *where) {
    for (int k = 0; k < LW_ROLES; k++)
        out[k] = o ? num(m, o, lw_model_role_names[k], where) : NAN;
}

/* "anatomy" and "oom" (absent in older reports: nothing read, no warning). */
static void read_anatomy(lw_model *m, const lw_json *root) {
    const lw_json *a = lw_json_get(root, "anatomy");
    if (a && lw_json_type_of(a) == LW_JSON_OBJECT) {
        m->anatomy_method = str(m, a, "method", "anatomy.");
        m->anatomy_note = str(m, a, "note", "anatomy.");
        const lw_json *ds = typed(m, a, "devices", LW_JSON_ARRAY, "anatomy.");
        size_t n = ds ? lw_json_len(ds) : 0;
        m->anatomy = n ? calloc(n, sizeof *m->anatomy) : NULL;
        for (size_t i = 0; m->anatomy && i < n; i++) {
            const lw_json *d = lw_json_at(ds, i);
            if (lw_json_type_of(d) != LW_JSON_OBJECT) continue;
            lw_m_anatomy *o = &m->anatomy[m->nanatomy++];
            o->device = num(m, d, "device", "anatomy.devices[].");
            o->total_bytes = num(m, d, "total_bytes", "anatomy.devices[].");
            o->at_step = num(m, d, "at_step", "anatomy.devices[].");
            read_roles(m, typed(m, d, "now", LW_JSON_OBJECT, "anatomy.devices[]."), o->now,
                       "anatomy.devices[].now.");
            read_roles(m, typed(m, d, "peak", LW_JSON_OBJECT, "anatomy.devices[]."), o->peak,
                       "anatomy.devices[].peak.");
        }
    }
    const lw_json *f = lw_json_get(root, "oom");
    if (lw_json_type_of(f) != LW_JSON_OBJECT) f = NULL;
    /* Its plain members by the table's rows (none when it is null). */
    read_members(m, f, "oom", "oom.");
    if (f) {
        lw_m_oom *o = &m->oom;
        o->have = 1;
        o->cause = lw_model_str(m, LW_FIELD_oom_cause);
        o->evidence = lw_model_str(m, LW_FIELD_oom_evidence);
        o->remedy = lw_model_str(m, LW_FIELD_oom_remedy);
        o->source = lw_model_str(m, LW_FIELD_oom_source);
        o->device = lw_model_num(m, LW_FIELD_oom_device);
        o->step = lw_model_num(m, LW_FIELD_oom_step);
        o->time_s = lw_model_num(m, LW_FIELD_oom_time_s);
        o->count = lw_model_num(m, LW_FIELD_oom_count);
        o->request_bytes = lw_model_num(m, LW_FIELD_oom_request_bytes);
        o->device_free_bytes = lw_model_num(m, LW_FIELD_oom_device_free_bytes);
        o->device_total_bytes = lw_model_num(m, LW_FIELD_oom_device_total_bytes);
        o->allocated_bytes = lw_model_num(m, LW_FIELD_oom_allocated_bytes);
        o->reserved_bytes = lw_model_num(m, LW_FIELD_oom_reserved_bytes);
        o->leak_bytes = lw_model_num(m, LW_FIELD_oom_leak_bytes);
        /* Shown on terminals as is: no control characters. */
        static const lw_field text_rows[] = {LW_FIELD_oom_cause, LW_FIELD_oom_evidence,
                                             LW_FIELD_oom_remedy, LW_FIELD_oom_source};
        const char **texts[] = {&o->cause, &o->evidence, &o->remedy, &o->source};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            for (const char *p = *texts[i]; p && *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                    warn(m, "oom has control characters; ignored");
                    *texts[i] = NULL;
                    m->field[text_rows[i]].str = NULL;
                    break;
                }
        if (!o->cause) o->have = 0;
    }
}

char *lw_model_anatomy_line(const lw_m_anatomy *a, int peak, char *out, size_t n) {
    const double *v = peak ? a->peak : a->now;
    size_t o = 0;
    out[0] = '\0';
    for (int k = 0; k < LW_ROLES && o < n; k++) {
        if (!isfinite(v[k])) continue;
        char b[32];
        int w = snprintf(out + o, n - o, "%s%s %s", o ? ", " : "", lw_model_role_labels[k],
                         lw_fmt_bytes(v[k], b, sizeof b));
        if (w > 0) o = o + (size_t)w < n ? o + (size_t)w : n - 1;
    }
    if (isfinite(a->total_bytes) && o < n) {
        char b[32];
        snprintf(out + o, n - o, "%sof %s", o ? ", " : "",
                 lw_fmt_bytes(a->total_bytes, b, sizeof b));
    }
    return out;
}

char *lw_model_anatomy_bar(const lw_m_anatomy *a, int width, char *out, size_t n) {
    static const char letters[LW_ROLES] = {'W', 'G', 'O', 'A', 'c', 'X', 'L'};
    if (n == 0) return out;
    if ((size_t)width >= n) width = (int)n - 1;
    double total = a->total_bytes, sum = 0;
    for (int k = 0; k < LW_ROLES; k++)
        if (isfinite(a->now[k]) && a->now[k] > 0) sum += a->now[k];
    if (!isfinite(total) || total < sum) total = sum;
    int o = 0;
    double acc = 0;
    for (int k = 0; k < LW_ROLES && total > 0; k++) {
        if (!isfinite(a->now[k]) || a->now[k] <= 0) continue;
        acc += a->now[k];
        int upto = (int)(acc / total * width + 0.5);
        while (o < upto && o < width)
            out[o++] = letters[k];
    }
    while (o < width)
        out[o++] = '.';
    out[o] = '\0';
    return out;
}

static void model_apart(lw_model *m);

/* The answer's line as the library built it (answer.c), when the report
 * carries it (answer.unit, one of the units every line counts in). */
static void read_answer(lw_model *m, const lw_json *ans) {
    lw_answer *a = &m->answer;
    lw_answer_init(a);
    const char *unit = ans ? str(m, ans, "unit", "answer.") : NULL;
    static const char *const units[] = {"step", "call", "interval"};
    for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(unit, units[i])) a->unit = units[i], m->answer_whole = 1;
    if (unit && !m->answer_whole)
        warn(m, "answer.unit is not one of step, call, interval; the answer is read from the "
                "rest of the report");
    if (!m->answer_whole) return;
    const char *kind = str(m, ans, "kind", "answer.");
    a->kind = kind && !strcmp(kind, "pinned_host") ? "pinned_host" : NULL;
    a->rate = num(m, ans, "bytes_per_step", "answer.");
    const lw_json *ci = typed(m, ans, "slope_ci", LW_JSON_ARRAY, "answer.");
    if (ci && lw_json_len(ci) == 2) {
        a->lo = lw_json_number(lw_json_at(ci, 0), NAN);
        a->hi = lw_json_number(lw_json_at(ci, 1), NAN);
    }
    a->per_second = num(m, ans, "bytes_per_second", "answer.");
    a->onset = num(m, ans, "onset_step", "answer.");
    a->onset_hi = num(m, ans, "onset_end_step", "answer.");
    a->steps = num(m, ans, "steps", "answer.");
    a->free_bytes = num(m, ans, "free_bytes", "answer.");
    a->total_bytes = num(m, ans, "total_bytes", "answer.");
    a->oom_seconds = num(m, ans, "oom_eta_seconds", "answer.");
    a->oom_steps = num(m, ans, "oom_eta_steps", "answer.");
    a->reason = str(m, ans, "reason", "answer.");
    a->more_steps = num(m, ans, "steps_to_decide", "answer.");
    a->rose_once = boolean(m, ans, "rose_once", "answer.") == 1;
    a->where_grows = boolean(m, ans, "grows", "answer.") == 1;
    a->where_rate = num(m, ans, "site_bytes_per_step", "answer.");
    a->where_live = num(m, ans, "site_live_bytes", "answer.");
    m->answer_says_where = boolean(m, ans, "says_where", "answer.") == 1;
    const lw_json *w = typed(m, ans, "where", LW_JSON_OBJECT, "answer.");
    m->answer_label = w ? str(m, w, "label", "answer.where.") : NULL;
}

static int load_doc(lw_model *m, const char *name, char *err, size_t errlen) {
    const lw_json *r = m->doc;
    if (lw_json_type_of(r) != LW_JSON_OBJECT) {
        snprintf(err, errlen,
                 "%s is not a leakwatch report (it holds a JSON %s, not an object); give the "
                 "file leakwatch wrote (LEAKWATCH_REPORT, default leakwatch-PID.json)",
                 name, lw_json_type_name(lw_json_type_of(r)));
        return -1;
    }
    const lw_json *tool = lw_json_get(r, "tool");
    const char *t = lw_json_string(tool);
    if (!t || strcmp(t, "leakwatch") != 0) {
        char shown[64];
        if (t)
            snprintf(err, errlen,
                     "%s is not a leakwatch report (its \"tool\" is \"%s\", expected "
                     "\"leakwatch\"); give the file leakwatch wrote",
                     name, lw_safe_text(t, shown, sizeof shown));
        else
            snprintf(err, errlen,
                     "%s is not a leakwatch report (no \"tool\": \"leakwatch\" field); give the "
                     "file leakwatch wrote (LEAKWATCH_REPORT, default leakwatch-PID.json)",
                     name);
        return -1;
    }
    m->tool = t;
    clear_members(m);
    /* The plain members of the top level by the table's rows; these named
     * copies are what the renderers read. */
    read_members(m, r, "", "");
    m->version = lw_model_str(m, LW_FIELD_version);
    m->command = lw_model_str(m, LW_FIELD_command);
    m->host = lw_model_str(m, LW_FIELD_host);
    m->reason = lw_model_str(m, LW_FIELD_reason);
    m->pid = lw_model_num(m, LW_FIELD_pid);
    m->rank = lw_model_num(m, LW_FIELD_rank);
    m->local_rank = lw_model_num(m, LW_FIELD_local_rank);
    m->world_size = lw_model_num(m, LW_FIELD_world_size);
    m->device = lw_model_num(m, LW_FIELD_device);
    m->report_path = lw_model_str(m, LW_FIELD_report_path);
    m->answer_site = NAN;
    const lw_json *answer = typed(m, r, "answer", LW_JSON_OBJECT, "");
    if (answer) m->answer_site = num(m, answer, "site", "answer.");
    read_answer(m, answer);
    m->written_at = lw_model_num(m, LW_FIELD_written_at);
    m->duration_s = lw_model_num(m, LW_FIELD_duration_s);
    m->verdict_text = lw_model_str(m, LW_FIELD_verdict);
    m->verdict = LW_VERDICT_UNKNOWN;
    if (m->verdict_text) {
        int v = lw_verdict_parse(m->verdict_text);
        if (v >= 0)
            m->verdict = (lw_verdict)v;
        else {
            char shown[40];
            warn(m, "verdict \"%s\" is not one of %s, %s, %s, %s; shown as unknown",
                 lw_safe_text(m->verdict_text, shown, sizeof shown),
                 lw_verdict_name(LW_VERDICT_LEAK), lw_verdict_name(LW_VERDICT_NO_LEAK),
                 lw_verdict_name(LW_VERDICT_INCONCLUSIVE),
                 lw_verdict_name(LW_VERDICT_NOTHING_SEEN));
        }
    } else {
        warn(m, "no \"verdict\"; shown as unknown");
    }
    read_totals(m, r);
    read_growth(m, r);
    m->sites_total = num(m, r, "sites_total", "");
    m->sites_reported = num(m, r, "sites_reported", "");
    read_sites(m, r);
    read_failures(m, r);
    const lw_json *series = typed(m, r, "series", LW_JSON_OBJECT, "");
    if (series)
        m->nseries =
            read_series(m, series, "floor", &m->sx, &m->sfloor, &m->st, &m->speak, "series.");
    m->tracker = typed(m, r, "tracker", LW_JSON_OBJECT, "");
    read_anatomy(m, r);
    read_other_members(m);
    /* LEAKWATCH_STACKS=0: its site stands for every allocation. */
    if (m->tracker && lw_json_bool(lw_json_get(m->tracker, "stacks"), 1) == 0)
        for (size_t i = 0; i < m->nsites; i++)
            m->sites[i].all_allocations = m->sites[i].nframes == 0;
    model_apart(m);
    return 0;
}

/* The parser's message, plus what to do about it. */
static void parse_error(const char *name, const char *perr, size_t size, char *err, size_t errlen) {
    if (size == 0)
        snprintf(err, errlen,
                 "%s is empty, not a leakwatch report; a report is written when the watched "
                 "process exits, or at once with 'leakwatch snapshot PID'",
                 name);
    else if (strstr(perr, "truncated") || strstr(perr, "end of input"))
        snprintf(err, errlen,
                 "%s is truncated (%s); copy the whole file again, or take a fresh one with "
                 "'leakwatch snapshot PID'",
                 name, perr);
    else
        snprintf(err, errlen, "%s is not valid JSON (%s); it is corrupt or not a leakwatch report",
                 name, perr);
}

int lw_model_load_text(lw_model *m, const char *name, const char *text, size_t len, char *err,
                       size_t errlen) {
    memset(m, 0, sizeof *m);
    m->path = strdup(name);
    char perr[256];
    m->doc = lw_json_parse(text, len, NULL, perr, sizeof perr);
    if (!m->doc) {
        parse_error(name, perr, len, err, errlen);
        return -1;
    }
    return load_doc(m, name, err, errlen);
}

int lw_model_load_answer(lw_model *m, long pid, const char *text, size_t len) {
    char name[64], err[1200];
    snprintf(name, sizeof name, "the answer of process %ld", pid);
    if (lw_model_load_text(m, name, text, len, err, sizeof err) == 0) return 0;
    lw_cli_error("%s", err);
    lw_model_free(m);
    return -1;
}

int lw_model_load(lw_model *m, const char *path, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    /* A FIFO or a device would block the read (or never end): only regular
     * files are reports. Opened without blocking to look. */
    char kind[64];
    if (lw_regular_input(path, kind, sizeof kind) != 0) {
        snprintf(err, errlen, "%s is %s, not a regular file; give the path of a report file", path,
                 kind);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        char perr[256];
        lw_json_parse_file(path, NULL, perr, sizeof perr); /* same wording as the reader */
        snprintf(err, errlen, "%s; check the path (a report is written when the process exits)",
                 perr);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    char perr[256];
    m->doc = lw_json_parse_file(path, NULL, perr, sizeof perr);
    if (!m->doc) {
        /* The reader's message starts with the file name: drop it. */
        size_t pl = strlen(path);
        const char *msg = !strncmp(perr, path, pl) && perr[pl] == ':' ? perr + pl + 2 : perr;
        if (size < 0) size = 1;
        parse_error(path, msg, (size_t)size, err, errlen);
        return -1;
    }
    return load_doc(m, path, err, errlen);
}

void lw_model_free(lw_model *m) {
    for (size_t i = 0; i < m->nsites; i++) {
        free(m->sites[i].frames);
        free(m->sites[i].series_x);
        free(m->sites[i].series_floor);
    }
    free(m->sites);
    free(m->failures);
    free(m->devices);
    free(m->anatomy);
    free(m->sx);
    free(m->st);
    free(m->sfloor);
    free(m->speak);
    size_t kept = m->nwarnings < MAX_WARNINGS ? m->nwarnings : MAX_WARNINGS;
    for (size_t i = 0; i < kept; i++)
        free(m->warnings[i]);
    free(m->warnings);
    lw_json_free(m->doc);
    free(m->path);
    memset(m, 0, sizeof *m);
}

void lw_model_print_warnings(const lw_model *m, size_t max) {
    size_t kept = m->nwarnings < MAX_WARNINGS ? m->nwarnings : MAX_WARNINGS;
    for (size_t i = 0; i < kept && i < max; i++)
        if (m->warnings[i])
            fprintf(stderr, "leakwatch: warning: %s: %s\n", m->path, m->warnings[i]);
    if (m->nwarnings > max)
        fprintf(stderr, "leakwatch: warning: %s: %zu more problems like these\n", m->path,
                m->nwarnings - max);
}

static const lw_model *rank_model; /* qsort has no context argument in C11 */

static double or0(double v) {
    return isfinite(v) ? v : 0;
}

static int by_worry(const void *a, const void *b) {
    const lw_m_site *x = &rank_model->sites[*(const size_t *)a];
    const lw_m_site *y = &rank_model->sites[*(const size_t *)b];
    if ((x->leak == 1) != (y->leak == 1)) return x->leak == 1 ? -1 : 1;
    if (or0(x->bytes_per_step) != or0(y->bytes_per_step))
        return or0(x->bytes_per_step) > or0(y->bytes_per_step) ? -1 : 1;
    if (or0(x->live_bytes) != or0(y->live_bytes))
        return or0(x->live_bytes) > or0(y->live_bytes) ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void lw_model_rank_sites(const lw_model *m, size_t *order) {
    for (size_t i = 0; i < m->nsites; i++)
        order[i] = i;
    /* The library ranked them (site_rank.c) and wrote them in that order. */
    if (m->answer_whole) return;
    rank_model = m;
    if (m->nsites > 1) qsort(order, m->nsites, sizeof *order, by_worry);
    rank_model = NULL;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double lw_model_trend_intercept(const lw_model *m) {
    double slope = m->growth.bytes_per_step;
    if (!isfinite(slope) || !m->nseries) return NAN;
    /* The median offset of the points since the onset: the start-up before
     * it (weights loaded) is not on the leak's line. */
    double from = isfinite(m->growth.onset_step) ? m->growth.onset_step : -INFINITY;
    double *r = malloc(m->nseries * sizeof *r);
    if (!r) return NAN;
    size_t n = 0;
    for (size_t pass = 0; pass < 2 && n == 0; pass++, from = -INFINITY)
        for (size_t i = 0; i < m->nseries; i++)
            if (isfinite(m->sx[i]) && isfinite(m->sfloor[i]) && m->sx[i] >= from)
                r[n++] = m->sfloor[i] - slope * m->sx[i];
    double v = NAN;
    if (n) {
        qsort(r, n, sizeof *r, cmp_dbl);
        v = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    }
    free(r);
    return v;
}

static const char *basename_of(const char *p) {
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

void lw_frame_label(const lw_m_frame *f, char *out, size_t n) {
    char fn[160], file[200], mod[120];
    lw_safe_text(f->function ? f->function : "??", fn, sizeof fn);
    if (f->file) {
        lw_safe_text(f->file, file, sizeof file);
        if (isfinite(f->line))
            snprintf(out, n, "%s:%.0f in %s", file, f->line, fn);
        else
            snprintf(out, n, "%s in %s", file, fn);
    } else if (f->module) {
        lw_safe_text(basename_of(f->module), mod, sizeof mod);
        if (f->function)
            snprintf(out, n, "%s (%s)", fn, mod);
        else {
            char off[40];
            snprintf(out, n, "%s+%s", mod,
                     lw_safe_text(f->offset ? f->offset : "?", off, sizeof off));
        }
    } else {
        char addr[40];
        snprintf(out, n, "%s at %s", fn,
                 lw_safe_text(f->address ? f->address : "?", addr, sizeof addr));
    }
}

static const char *user_code;

void lw_model_set_user_code(const char *uc) {
    user_code = uc && *uc ? uc : NULL;
}

const char *lw_model_user_code(void) {
    return user_code;
}

int lw_site_is_quiet(const lw_m_site *s) {
    return s->leak != 1 && !(isfinite(s->live_bytes) && s->live_bytes != 0) &&
           !(isfinite(s->bytes_per_step) && s->bytes_per_step != 0) &&
           !(isfinite(s->failed_alloc_count) && s->failed_alloc_count > 0);
}

static lw_frame_ref ref_of(const lw_m_frame *f) {
    return (lw_frame_ref){f->kind && !strcmp(f->kind, "python"), f->function, f->file, f->module,
                          isfinite(f->line) && f->line > 0 && f->line < 1e9 ? (int)f->line : 0};
}

/* Under a LEAKWATCH_USER_CODE of the command's own, the places to look are
 * its own, and so are the frames that tell apart the leaking and the
 * non-leaking sites that share one (where.h's rule, as the report applies
 * it, over the sites the report holds). */
static void model_apart(lw_model *m) {
    if (!user_code || !m->nsites) return;
    size_t n = m->nsites, total = 0;
    for (size_t i = 0; i < n; i++)
        total += m->sites[i].nframes;
    lw_frame_ref *refs = total ? malloc(total * sizeof *refs) : NULL;
    size_t *nf = malloc(n * sizeof *nf);
    int *leak = malloc(n * sizeof *leak), *distinct = malloc(n * sizeof *distinct);
    if ((refs || !total) && nf && leak && distinct) {
        for (size_t i = 0, k = 0; i < n; i++) {
            const lw_m_site *s = &m->sites[i];
            nf[i] = s->nframes;
            leak[i] = s->leak == 1;
            for (size_t j = 0; j < s->nframes; j++)
                refs[k++] = ref_of(&s->frames[j]);
        }
        /* The sites in the report's order, the most relevant first, within
         * the library's budget of pairs. */
        long budget = LW_WHERE_APART_BUDGET;
        if (!lw_where_apart_sites(refs, nf, leak, n, user_code, &budget, distinct))
            for (size_t i = 0; i < n; i++)
                m->sites[i].where_distinct = distinct[i] >= 0 ? distinct[i] : NAN;
    }
    free(refs);
    free(nf);
    free(leak);
    free(distinct);
}

int lw_model_where(const lw_m_site *s, char *out, size_t n) {
    if (s->all_allocations) {
        snprintf(out, n, "all allocations");
        return -1;
    }
    if (isfinite(s->id))
        snprintf(out, n, "site %.0f", s->id);
    else
        snprintf(out, n, "site ?");
    if (!s->nframes) return -1;
    int k = -1;
    if (!user_code && isfinite(s->where_frame) && s->where_frame >= 0 &&
        s->where_frame < (double)s->nframes) {
        k = (int)s->where_frame;
    } else {
        lw_frame_ref *refs = malloc(s->nframes * sizeof *refs);
        if (!refs) return -1;
        for (size_t i = 0; i < s->nframes; i++) {
            const lw_m_frame *f = &s->frames[i];
            refs[i] = (lw_frame_ref){
                f->kind && !strcmp(f->kind, "python"), f->function, f->file, f->module,
                isfinite(f->line) && f->line > 0 && f->line < 1e9 ? (int)f->line : 0};
        }
        k = lw_where_pick(refs, s->nframes, user_code, NULL);
        free(refs);
    }
    if (k < 0) return -1;
    lw_frame_ref r = ref_of(&s->frames[k]);
    char label[600];
    /* The frame that tells this site apart from others sharing its place, as
     * the report computed it from all the sites (model_apart under the
     * command's own LEAKWATCH_USER_CODE). */
    int dk = lw_model_where_distinct(s, k);
    if (dk >= 0) {
        lw_frame_ref d = ref_of(&s->frames[dk]);
        lw_where_label_via(&d, &r, label, sizeof label);
    } else {
        lw_where_label(&r, label, sizeof label);
    }
    lw_safe_text(label, out, n);
    return k;
}

int lw_model_where_distinct(const lw_m_site *s, int k) {
    if (k < 0 || !((user_code || k == s->where_frame) && isfinite(s->where_distinct) &&
                   s->where_distinct > k && s->where_distinct < (double)s->nframes))
        return -1;
    return (int)s->where_distinct;
}

const lw_m_site *lw_model_top_site(const lw_model *m) {
    if (!m->nsites) return NULL;
    if (isfinite(m->answer_site))
        for (size_t i = 0; i < m->nsites; i++)
            if (m->sites[i].id == m->answer_site) return &m->sites[i];
    /* The library chose: none of these (older reports: chosen below). */
    if (m->answer_whole) return NULL;
    size_t *order = malloc(m->nsites * sizeof *order);
    if (!order) return &m->sites[0];
    lw_model_rank_sites(m, order);
    const lw_m_site *s = &m->sites[order[0]];
    free(order);
    return s;
}

/* How much a site's own floor rose over its series (0: none, or no series). */
static double site_rise(const lw_m_site *s) {
    double first = NAN, last = NAN;
    for (size_t i = 0; i < s->nseries; i++) {
        if (!isfinite(s->series_floor[i])) continue;
        if (!isfinite(first)) first = s->series_floor[i];
        last = s->series_floor[i];
    }
    return isfinite(first) && last > first ? last - first : 0;
}

/* The site that grows most (its growth per step, else how far its own floor
 * rose), for an answer not decided yet (older reports); NULL when none grows. */
static const lw_m_site *growing_site(const lw_model *m) {
    const lw_m_site *best = NULL;
    double best_rate = 0, best_rise = 0;
    for (size_t i = 0; i < m->nsites; i++) {
        const lw_m_site *s = &m->sites[i];
        double rate = isfinite(s->bytes_per_step) ? s->bytes_per_step : 0, rise = site_rise(s);
        if (rate <= 0 && rise <= 0) continue;
        if (rate > best_rate || (rate == best_rate && rise > best_rise))
            best = s, best_rate = rate, best_rise = rise;
    }
    return best;
}

/* A report older than answer.unit: its answer from its other sections, by
 * the rule the library's answer.c followed then. */
static void answer_of_older_report(const lw_model *m, lw_answer *a, char *where, size_t wn) {
    const lw_m_growth *g = &m->growth;
    lw_answer_init(a);
    a->verdict = lw_verdict_name(m->verdict);
    a->unit = g->step_source && !strcmp(g->step_source, "time")      ? "interval"
              : g->step_unit && !strcmp(g->step_unit, "module_call") ? "call"
                                                                     : "step";
    a->steps = g->steps;
    a->free_bytes = g->device_free_bytes;
    a->total_bytes = g->device_total_bytes;
    if (m->verdict == LW_VERDICT_NO_LEAK && m->doc) {
        /* A floor that rose once and held level (as the library's answer.c). */
        double bins = lw_json_number(lw_json_path(m->doc, "growth.window_bins"), NAN),
               width = lw_json_number(lw_json_path(m->doc, "growth.steps_per_bin"), NAN);
        a->rose_once = lw_answer_rose_once(
            g->bytes_per_step, bins * width,
            lw_json_number(lw_json_path(m->doc, "growth.bin_noise_bytes"), NAN));
    }
    if (m->verdict == LW_VERDICT_INCONCLUSIVE && isfinite(g->bytes_per_step) &&
        g->bytes_per_step > 0 && isfinite(g->ci_lo) && g->ci_lo >= 0) {
        /* Growth seen, not yet confirmed (as the library's answer.c). */
        a->rate = g->bytes_per_step;
        a->lo = g->ci_lo;
        a->hi = g->ci_hi;
        a->per_second = g->bytes_per_second;
    }
    if (m->verdict == LW_VERDICT_LEAK) {
        a->rate = g->bytes_per_step;
        a->lo = g->ci_lo;
        a->hi = g->ci_hi;
        a->per_second = g->bytes_per_second;
        a->onset = g->onset_step;
        if (isfinite(g->onset_hi) && g->onset_hi > g->onset_step) a->onset_hi = g->onset_hi;
        a->oom_seconds = g->oom_eta_seconds;
        a->oom_steps = g->oom_eta_steps;
        if (g->memory_kind && !strcmp(g->memory_kind, "pinned_host")) {
            /* A leak of pinned host memory runs out of the host's memory. */
            a->kind = "pinned_host";
            a->free_bytes = g->host_available_bytes;
            a->total_bytes = g->host_total_bytes;
        }
    }
    if (m->oom.have) {
        a->oom_cause = m->oom.cause;
        a->oom_evidence = m->oom.evidence;
        a->oom_remedy = m->oom.remedy;
    }
    const lw_m_site *top = lw_model_top_site(m);
    if (m->verdict == LW_VERDICT_INCONCLUSIVE) {
        /* Its own reason, what would decide it, and the site that grows. */
        a->reason = lw_json_string(lw_json_path(m->doc, "growth.reason"));
        a->more_steps = lw_json_number(lw_json_path(m->doc, "growth.steps_to_decide"), NAN);
        const lw_m_site *grows = growing_site(m);
        if (grows)
            top = grows, a->where_grows = 1;
        else if (top && lw_json_bool(lw_json_path(m->doc, "answer.grows"), 0) == 1)
            a->where_grows = 1; /* the library saw it grow in its own series */
    }
    if (top &&
        (m->verdict == LW_VERDICT_LEAK || (isfinite(top->live_bytes) && top->live_bytes > 0))) {
        lw_model_where(top, where, wn);
        a->where = where;
        if (top->leak == 1)
            a->where_rate = top->bytes_per_step;
        else
            a->where_live = top->live_bytes;
    }
}

void lw_model_answer(const lw_model *m, lw_answer *a, char *where, size_t wn) {
    if (!m->answer_whole) {
        answer_of_older_report(m, a, where, wn);
        return;
    }
    /* As the library built it (answer.c), rendered: the verdict, the
     * out-of-memory's post-mortem and the place's label are the report's
     * own, the label under the command's --user-code if one is given. */
    *a = m->answer;
    a->verdict = lw_verdict_name(m->verdict);
    if (m->oom.have) {
        a->oom_cause = m->oom.cause;
        a->oom_evidence = m->oom.evidence;
        a->oom_remedy = m->oom.remedy;
    }
    a->where = NULL;
    if (!m->answer_says_where) return;
    const lw_m_site *top = lw_model_top_site(m);
    if (top) {
        lw_model_where(top, where, wn);
        a->where = where;
    } else if (m->answer_label) {
        a->where = lw_safe_text(m->answer_label, where, wn);
    }
}

void lw_model_name(const lw_model *m, char *out, size_t n) {
    if (isfinite(m->rank)) {
        snprintf(out, n, "rank %.0f", m->rank);
        return;
    }
    const char *b = m->path ? strrchr(m->path, '/') : NULL;
    char safe[200];
    lw_safe_text(b ? b + 1 : m->path ? m->path : "?", safe, sizeof safe);
    snprintf(out, n, "%s", safe);
}
