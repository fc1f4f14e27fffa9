/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON report: what it holds, emitted to a stream (its format is a
 * contract: docs/report-fields.md). report_file.c writes it to files,
 * summary.c prints the exit summary. */
#include "report.h"

#include "report_file.h"

#include "answer.h"

#include "clock.h"
#include "json_write.h"
#include "runstate.h"
#include "live.h"
#include "options.h"
#include "pystack.h"
#include "stack.h"
#include "record.h"
#include "growth.h"
#include "imports.h"
#include "sites.h"
#include "symbolize.h"
#include "torch_info.h"
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
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TORCH_BINS 300
#define REPORT_WRITE_BUF 16384

static void emit_counts(lw_jw *w, lw_counts c) {
    lw_jw_uint(w, "alloc_count", c.alloc_count);
    lw_jw_uint(w, "free_count", c.free_count);
    lw_jw_uint(w, "failed_alloc_count", c.failed_count);
    lw_jw_int(w, "live_bytes", c.live_bytes);
    lw_jw_int(w, "live_count", c.live_count);
    lw_jw_int(w, "peak_live_bytes", c.peak_live_bytes);
}

static void emit_totals(lw_jw *w) {
    lw_jw_object(w, "totals");
    emit_counts(w, lw_totals_get(-2, LW_KIND_COUNT));
    lw_jw_uint(w, "unknown_free_count", lw_totals_unknown_frees());
    lw_jw_int(w, "mapped_bytes", lw_totals_mapped_bytes());
    /* Other processes' memory opened here: in none of the counters above. */
    lw_jw_object(w, "imported");
    emit_counts(w, lw_imports_get());
    lw_jw_int(w, "mapped_bytes", lw_imports_mapped_bytes());
    lw_jw_end(w);
    lw_jw_object(w, "by_kind");
    for (int k = 0; k < LW_KIND_COUNT; k++) {
        lw_jw_object(w, lw_kind_name((lw_kind)k));
        emit_counts(w, lw_totals_get(-2, (lw_kind)k));
        lw_jw_end(w);
    }
    lw_jw_end(w);
    lw_jw_array(w, "by_device");
    uint64_t seen = lw_totals_devices_seen();
    for (int d = -1; d < LW_MAX_DEVICES; d++) {
        if (!(seen & (1ull << (d + 1)))) continue;
        lw_jw_object(w, NULL);
        lw_jw_int(w, "device", d);
        emit_counts(w, lw_totals_get(d, LW_KIND_COUNT));
        lw_jw_object(w, "by_kind");
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

/* One frame of a site's stack as a report shows it: native (with its
 * symbol, possibly a function inlined there) or Python. */
typedef struct {
    lw_frame_ref ref;
    uintptr_t ip;         /* native */
    const lw_symbol *sym; /* native: NULL when unknown */
    int inlined;
} frame_entry;

typedef struct {
    frame_entry *f;
    size_t n, cap;
} frame_list;

static void push(frame_list *l, frame_entry e) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        frame_entry *f = realloc(l->f, cap * sizeof *f);
        if (!f) return;
        l->f = f, l->cap = cap;
    }
    l->f[l->n++] = e;
}

static void push_symbol(frame_list *l, const lw_symbol *s, uintptr_t ip, int inlined) {
    frame_entry e = {
        {0, s ? s->function : NULL, s ? s->file : NULL, s ? s->module : NULL, s ? s->line : 0},
        ip,
        s,
        inlined};
    push(l, e);
}

/* The frame at ip, preceded by the functions inlined there, innermost first. */
static void push_native(frame_list *l, lw_symtab *syms, uintptr_t ip) {
    const lw_symbol *s = syms ? lw_symtab_lookup(syms, ip) : NULL;
    for (int k = 0; s && k < s->ninlined; k++)
        push_symbol(l, &s->inlined[k], ip, 1);
    push_symbol(l, s, ip, 0);
}

static void push_python(frame_list *l, const lw_pystack_frame *f) {
    frame_entry e = {{1, f->function, f->file, NULL, f->line > 0 ? f->line : 0}, 0, NULL, 0};
    push(l, e);
}

/* leakwatch's own wrapper of torch.autograd.backward, in the frames borrowed
 * from the thread waiting in backward(): dropped, as leakwatch's native
 * frames are. */
static int is_helper_frame(const lw_pystack_frame *f) {
    return f->file && strstr(f->file, "/leakwatch/_torch.py");
}

static const lw_pystack_frame *backward_caller(const lw_pystack *py) {
    for (int i = 0; i < py->n; i++)
        if (py->f[i].file && !strstr(py->f[i].file, "/torch/") && !is_helper_frame(&py->f[i]))
            return &py->f[i];
    return &py->f[0];
}

/* The Python frames of the next native evaluation call: from *next up to and
 * including the first one that entered it. */
static void push_python_group(frame_list *l, const lw_pystack *py, int *next) {
    while (*next < py->n) {
        const lw_pystack_frame *f = &py->f[(*next)++];
        push_python(l, f);
        if (f->entry) break;
    }
}

static int is_eval_frame(const lw_symbol *sym) {
    return sym && sym->function && strcmp(sym->function, "_PyEval_EvalFrameDefault") == 0;
}

/* Innermost first. Python frames stand where the interpreter's evaluation
 * frames stand; the interpreter's other frames (calls, argument handling)
 * are hidden behind them. The report, the place to look and the labels on
 * stderr all come from this one list. */
static void collect_frames(frame_list *l, lw_symtab *syms, const lw_site *s) {
    memset(l, 0, sizeof *l);
    const uintptr_t *ips = lw_site_native(s);
    const lw_pystack *py = lw_pystack_of(s);
    const char *interp = NULL;
    if (py && syms)
        for (int i = 0; i < s->nnative && !interp; i++) {
            const lw_symbol *sym = lw_symtab_lookup(syms, ips[i]);
            if (is_eval_frame(sym)) interp = sym->module;
        }
    int next = 0;
    for (int i = 0; i < s->nnative; i++) {
        const lw_symbol *sym = interp ? lw_symtab_lookup(syms, ips[i]) : NULL;
        if (interp && is_eval_frame(sym)) {
            push_python_group(l, py, &next);
            continue;
        }
        if (interp && sym && sym->module && strcmp(sym->module, interp) == 0) continue;
        push_native(l, syms, ips[i]);
    }
    /* Python frames beyond the native stack kept (or all of them, when no
     * evaluation frame was found): outermost, at the end. A site made on
     * autograd's thread has the frames of the thread waiting in backward(),
     * after a frame that says so (leakwatch's own wrapper dropped). */
    int borrowed = py && lw_site_in_backward(s);
    if (borrowed && next < py->n) {
        static const lw_pystack_frame engine = {"<autograd engine>", "backward", 0, 0};
        push_python(l, &engine);
    }
    while (py && next < py->n) {
        const lw_pystack_frame *f = &py->f[next++];
        if (!borrowed || !is_helper_frame(f)) push_python(l, f);
    }
}

/* One frame; inlined ones exist only in the debug information and share the
 * address, module and offset of the frame they were inlined into. */
static void emit_frame(lw_jw *w, const frame_entry *e) {
    char addr[32];
    const lw_symbol *s = e->sym;
    lw_jw_object(w, NULL);
    lw_jw_str(w, "kind", e->ref.python ? "python" : "native");
    lw_jw_str(w, "function", e->ref.function);
    lw_jw_str(w, "file", e->ref.file);
    if (e->ref.line > 0)
        lw_jw_int(w, "line", e->ref.line);
    else
        lw_jw_null(w, "line");
    if (e->ref.python) {
        lw_jw_null(w, "module");
        lw_jw_null(w, "address");
        lw_jw_null(w, "offset");
    } else {
        lw_jw_str(w, "module", s ? s->module : NULL);
        snprintf(addr, sizeof addr, "0x%lx", (unsigned long)e->ip);
        lw_jw_str(w, "address", addr);
        if (s && s->module) {
            snprintf(addr, sizeof addr, "0x%lx", (unsigned long)s->offset);
            lw_jw_str(w, "offset", addr);
        } else {
            lw_jw_null(w, "offset");
        }
        if (e->inlined) lw_jw_bool(w, "inlined", 1);
    }
    lw_jw_end(w);
}

/* The frames as where.h takes them (NULL when there are none). */
static lw_frame_ref *refs_of(const frame_list *l) {
    lw_frame_ref *refs = l->n ? malloc(l->n * sizeof *refs) : NULL;
    for (size_t i = 0; refs && i < l->n; i++)
        refs[i] = l->f[i].ref;
    return refs;
}

/* The place to look among a site's frames (where.h): index or -1. */
static int pick_where(const frame_list *l, const char **why) {
    lw_frame_ref *refs = refs_of(l);
    if (!refs) return -1;
    int k = lw_where_pick(refs, l->n, lw_opt_str(LW_OPT_USER_CODE), why);
    free(refs);
    return k;
}

/* The label every output shows for a site: its place to look, or, when that
 * place is shared with sites of the other kind, the frame that tells it
 * apart by way of the place (distinct >= 0). */
static char *where_text(const frame_list *l, int k, int distinct, char *out, size_t n) {
    if (distinct >= 0 && (size_t)distinct < l->n)
        return lw_where_label_via(&l->f[distinct].ref, &l->f[k].ref, out, n);
    return lw_where_label(&l->f[k].ref, out, n);
}

/* "where": the place to look, by frame index into "frames", with its label
 * as every output shows it; distinct: the distinguishing frame or -1. */
static void emit_where(lw_jw *w, const frame_list *l, int distinct) {
    const char *why = NULL;
    int k = pick_where(l, &why);
    if (k < 0) {
        lw_jw_null(w, "where");
        return;
    }
    char label[512];
    const lw_frame_ref *r = &l->f[k].ref;
    lw_jw_object(w, "where");
    lw_jw_int(w, "frame", k);
    lw_jw_str(w, "label", where_text(l, k, distinct, label, sizeof label));
    lw_jw_str(w, "file", r->file);
    if (r->line > 0)
        lw_jw_int(w, "line", r->line);
    else
        lw_jw_null(w, "line");
    lw_jw_str(w, "function", r->function);
    lw_jw_str(w, "why", why);
    lw_jw_str(w, "place_label", lw_where_label(r, label, sizeof label));
    if (distinct >= 0 && (size_t)distinct < l->n)
        lw_jw_int(w, "distinct_frame", distinct);
    else
        lw_jw_null(w, "distinct_frame");
    lw_jw_end(w);
}

static void emit_frames(lw_jw *w, const frame_list *l) {
    lw_jw_array(w, "frames");
    for (size_t i = 0; i < l->n; i++)
        emit_frame(w, &l->f[i]);
    lw_jw_end(w);
}

/* "in backward, called from train.py:31": the innermost frame of the thread
 * waiting in backward() outside torch's and leakwatch's own Python code. */
static void emit_backward_note(lw_jw *w, const lw_site *s) {
    const lw_pystack *py = lw_site_in_backward(s) ? lw_pystack_of(s) : NULL;
    if (!py || !py->n) return;
    char note[300];
    const lw_pystack_frame *f = backward_caller(py);
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    snprintf(note, sizeof note, "in backward, called from %s:%d", base ? base + 1 : f->file,
             f->line);
    lw_jw_str(w, "note", note);
}

typedef struct {
    lw_site *site;
    int64_t live_bytes;
    uint64_t alloc_bytes;
    int leak;
    double slope;
} ranked_site;

/* Leaking sites first, fastest growth first; then by what they hold. */
/* The site the answer names, and the live bytes its entry in "sites" was
 * written with (per thread: reports may be written from two at once). */
static __thread const lw_site *answer_site;
static __thread int64_t answer_live = -1;

static int by_relevance(const void *a, const void *b) {
    const ranked_site *x = a, *y = b;
    if (x->leak != y->leak) return x->leak ? -1 : 1;
    if (x->leak && x->slope != y->slope) return x->slope > y->slope ? -1 : 1;
    if (x->live_bytes != y->live_bytes) return x->live_bytes > y->live_bytes ? -1 : 1;
    if (x->alloc_bytes != y->alloc_bytes) return x->alloc_bytes > y->alloc_bytes ? -1 : 1;
    return x->site->id < y->site->id ? -1 : x->site->id > y->site->id;
}

/* What the sampler concluded about each leaking site, copied under its lock:
 * its thread updates the tracks while a report is written from another. */
typedef struct {
    const lw_site *site;
    lw_growth growth;
    int nbins;
    lw_bin bins[LW_SITE_BINS + 1];
} site_view;

typedef struct {
    site_view *v;
    size_t n, cap;
} site_views;

static void copy_view(lw_site *s, const lw_site_track *t, void *arg) {
    site_views *vs = arg;
    if (!t->evaluated || t->growth.verdict != LW_VERDICT_LEAK) return;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 16;
        site_view *v = realloc(vs->v, cap * sizeof *v);
        if (!v) return;
        vs->v = v, vs->cap = cap;
    }
    site_view *v = &vs->v[vs->n++];
    v->site = s;
    v->growth = t->growth;
    v->nbins = lw_series_get(&t->series, v->bins, LW_SITE_BINS + 1);
}

static int by_site(const void *a, const void *b) {
    const lw_site *x = ((const site_view *)a)->site, *y = ((const site_view *)b)->site;
    return x < y ? -1 : x > y;
}

/* Only a process whose verdict is a leak has leaking sites. */
static void views_load(site_views *vs, int global_leak) {
    memset(vs, 0, sizeof *vs);
    if (!global_leak) return;
    lw_growth_each_site(copy_view, vs);
    if (vs->n) qsort(vs->v, vs->n, sizeof *vs->v, by_site);
}

static const site_view *view_of(const site_views *vs, const lw_site *s) {
    site_view key = {.site = s};
    return vs->n ? bsearch(&key, vs->v, vs->n, sizeof *vs->v, by_site) : NULL;
}

static void views_free(site_views *vs) {
    free(vs->v);
}

/* Every site, most relevant first: the order the report writes them in. *np
 * is their count; NULL when out of memory. */
static ranked_site *rank_sites(const site_views *vs, size_t *np) {
    size_t n = 0, cap = lw_sites_count() + 1;
    ranked_site *all = calloc(cap, sizeof *all);
    if (all) {
        for (lw_site *s = lw_sites_first(); s && n < cap - 1; s = s->next) {
            const site_view *v = view_of(vs, s);
            lw_site_counts c;
            lw_site_get(s, &c);
            all[n++] =
                (ranked_site){s, c.live_bytes, c.alloc_bytes, v != NULL, v ? v->growth.slope : 0};
        }
        lw_site *o = lw_site_overflow();
        lw_site_counts c;
        lw_site_get(o, &c);
        if (c.alloc_count || c.failed_count)
            all[n++] = (ranked_site){o, c.live_bytes, c.alloc_bytes, 0, 0};
        qsort(all, n, sizeof *all, by_relevance);
    }
    *np = n;
    return all;
}

/* How many of those the report writes at most (after PyTorch's own). */
static size_t sites_shown(void) {
    size_t limit = (size_t)lw_opt_int(LW_OPT_REPORT_SITES);
    size_t nt = lw_torch_info_sites(NULL);
    return nt > limit ? 0 : limit - nt;
}

/* The distinguishing frame of every site whose place to look is shared by
 * leaking and non-leaking sites (where.h, lw_where_apart): computed once per
 * report, warning or summary from the set of sites the report writes, never
 * on the allocation path, so that every view names the same frame. */
typedef struct {
    const lw_site *site;
    int leak;
    int distinct;  /* frame index, or -1 */
    double weight; /* leaking: its growth per step; else its live bytes */
    char key[256]; /* the place's label: sites that may share it sort together */
} site_place;

typedef struct {
    site_place *p;
    size_t n;
} site_places;

static int by_key(const void *a, const void *b) {
    return strcmp(((const site_place *)a)->key, ((const site_place *)b)->key);
}

static int by_place_site(const void *a, const void *b) {
    const lw_site *x = ((const site_place *)a)->site, *y = ((const site_place *)b)->site;
    return x < y ? -1 : x > y;
}

/* Leaking sites first, fastest first; then the others, largest first. */
static int by_weight(const void *a, const void *b) {
    const site_place *x = a, *y = b;
    if (x->leak != y->leak) return x->leak ? -1 : 1;
    return x->weight > y->weight ? -1 : x->weight < y->weight;
}

/* Pairs compared per report at most: a wrapper shared by thousands of sites,
 * many of them leaking, must not hold the report up. Beyond it (the least
 * relevant sites, as ordered above), sites keep their plain place. */
#define APART_BUDGET 2000000

/* One group of sites with the same label of their place, leaking and not. */
static void places_apart(site_place *g, size_t n, lw_symtab *syms, long *budget) {
    qsort(g, n, sizeof *g, by_weight);
    frame_list *ls = calloc(n, sizeof *ls);
    lw_frame_ref **refs = calloc(n, sizeof *refs);
    int **told = calloc(n, sizeof *told);
    size_t *ntold = calloc(n, sizeof *ntold);
    int *at = calloc(n, sizeof *at);
    const char *uc = lw_opt_str(LW_OPT_USER_CODE);
    if (ls && refs && told && ntold && at) {
        for (size_t i = 0; i < n; i++) {
            collect_frames(&ls[i], syms, g[i].site);
            refs[i] = refs_of(&ls[i]);
            told[i] = ls[i].n ? malloc(ls[i].n * sizeof **told) : NULL;
            at[i] = refs[i] && told[i] ? lw_where_pick(refs[i], ls[i].n, uc, NULL) : -1;
            if (at[i] >= 0)
                ntold[i] = lw_where_telling(refs[i], ls[i].n, at[i], uc, told[i], ls[i].n);
        }
        for (size_t i = 0; i < n; i++) {
            if (*budget <= 0) break;
            int best = -1;
            for (size_t j = 0; j < n && at[i] >= 0; j++) {
                if (g[j].leak == g[i].leak || at[j] < 0) continue;
                int d = lw_where_apart_told(refs[i], at[i], told[i], ntold[i], refs[j], at[j],
                                            told[j], ntold[j]);
                if (d > best) best = d;
                (*budget)--;
            }
            g[i].distinct = best;
        }
    }
    for (size_t i = 0; ls && i < n; i++) {
        free(ls[i].f);
        if (refs) free(refs[i]);
        if (told) free(told[i]);
    }
    free(ls);
    free(refs);
    free(told);
    free(ntold);
    free(at);
}

/* Over the sites the report writes (the first `shown` of all, ranked): the
 * cost stays that of the report however many sites the job has, and the
 * command, which sees those sites only, applies the same rule to the same
 * set. */
static void places_load(site_places *ps, lw_symtab *syms, const site_views *vs,
                        const ranked_site *all, size_t shown) {
    memset(ps, 0, sizeof *ps);
    if (!vs->n || !all || !shown) return; /* no leaking site: no place to tell apart */
    size_t n = 0;
    site_place *p = calloc(shown, sizeof *p);
    if (!p) return;
    for (size_t i = 0; i < shown; i++) {
        const lw_site *s = all[i].site;
        frame_list l;
        collect_frames(&l, syms, s);
        int k = pick_where(&l, NULL);
        if (k >= 0) {
            p[n] = (site_place){s, all[i].leak, -1,
                                all[i].leak ? all[i].slope : (double)all[i].live_bytes, ""};
            lw_where_label(&l.f[k].ref, p[n].key, sizeof p[n].key);
            n++;
        }
        free(l.f);
    }
    qsort(p, n, sizeof *p, by_key);
    long budget = APART_BUDGET;
    for (size_t a = 0, b; a < n; a = b) {
        int mixed = 0;
        for (b = a + 1; b < n && !strcmp(p[a].key, p[b].key); b++)
            mixed |= p[b].leak != p[a].leak;
        if (mixed) places_apart(&p[a], b - a, syms, &budget);
    }
    qsort(p, n, sizeof *p, by_place_site);
    ps->p = p, ps->n = n;
}

static int distinct_of(const site_places *ps, const lw_site *s) {
    site_place key = {.site = s};
    const site_place *p = ps->n ? bsearch(&key, ps->p, ps->n, sizeof *ps->p, by_place_site) : NULL;
    return p ? p->distinct : -1;
}

static void places_free(site_places *ps) {
    free(ps->p);
}

static void emit_site_series(lw_jw *w, const site_view *v) {
    lw_jw_object(w, "series");
    lw_jw_array(w, "x");
    for (int i = 0; i < v->nbins; i++)
        lw_jw_double(w, NULL, v->bins[i].x);
    lw_jw_end(w);
    lw_jw_array(w, "floor");
    for (int i = 0; i < v->nbins; i++)
        lw_jw_double(w, NULL, v->bins[i].floor);
    lw_jw_end(w);
    lw_jw_end(w);
}

static void emit_site(lw_jw *w, lw_symtab *syms, const lw_site *s, const site_view *v, int rank,
                      int distinct) {
    lw_jw_object(w, NULL);
    lw_jw_uint(w, "id", s->id);
    /* Summed over the threads' shards, once: the fields agree. */
    lw_site_counts c;
    lw_site_get(s, &c);
    int64_t live = c.live_bytes;
    if (s == answer_site) answer_live = live; /* the answer says what the site says */
    lw_jw_int(w, "live_bytes", live);
    /* Derived: keeping a live count would cost the hot path a count. */
    lw_jw_int(w, "live_count", c.live_count);
    lw_jw_uint(w, "alloc_count", c.alloc_count);
    lw_jw_uint(w, "alloc_bytes", c.alloc_bytes);
    lw_jw_uint(w, "free_count", c.free_count);
    lw_jw_uint(w, "failed_alloc_count", c.failed_count);
    lw_jw_bool(w, "leak", v != NULL);
    lw_jw_double(w, "bytes_per_step", v ? v->growth.slope : 0.0);
    if (v) {
        lw_jw_int(w, "rank", rank);
        lw_jw_array(w, "slope_ci");
        lw_jw_double(w, NULL, v->growth.lo);
        lw_jw_double(w, NULL, v->growth.hi);
        lw_jw_end(w);
        lw_jw_double(w, "p_value", v->growth.p_value);
    }
    lw_jw_bool(w, "pooled", s == lw_site_overflow());
    /* The native frames stop at the Python interpreter: what was below it
     * (main, the interpreter's start) is described by the Python frames. */
    lw_jw_bool(w, "native_cut_at_python", s->native_cut != 0);
    if (v) emit_site_series(w, v);
    emit_backward_note(w, s);
    frame_list l;
    collect_frames(&l, syms, s);
    emit_where(w, &l, distinct);
    emit_frames(w, &l);
    free(l.f);
    lw_jw_end(w);
}

/* Writes the sites, most relevant first; returns the first one (the site the
 * answer names), or NULL, and its distinguishing frame in *top_distinct. */
static const lw_site *emit_sites(lw_jw *w, lw_symtab *syms, int global_leak, int *top_distinct) {
    site_views vs;
    views_load(&vs, global_leak);
    size_t n = 0;
    ranked_site *all = rank_sites(&vs, &n);
    site_places ps;
    places_load(&ps, syms, &vs, all, n < sites_shown() ? n : sites_shown());
    size_t limit = (size_t)lw_opt_int(LW_OPT_REPORT_SITES), written = 0;
    /* Sites found in PyTorch's allocation history (source "pytorch_history")
     * come first: they name tensors, where the others name segments. */
    size_t nt = lw_torch_info_sites(NULL);
    if (nt > limit) nt = limit;
    lw_jw_uint(w, "sites_total", lw_sites_count() + nt);
    lw_jw_array(w, "sites");
    lw_torch_info_emit_sites(w, nt);
    limit -= nt;
    /* Whatever the shim writes, the command must read: the sites stop once
     * they fill LW_REPORT_SITES_BYTES (the most relevant come first), far
     * below what the command accepts. sites_reported says how many. */
    long long start = lw_jw_tell(w);
    for (size_t i = 0; i < n && i < limit; i++) {
        long long at = lw_jw_tell(w);
        if (start >= 0 && at >= 0 && at - start >= LW_REPORT_SITES_BYTES) break;
        emit_site(w, syms, all[i].site, view_of(&vs, all[i].site), all[i].leak ? (int)i + 1 : 0,
                  distinct_of(&ps, all[i].site));
        written++;
    }
    lw_jw_end(w);
    lw_jw_uint(w, "sites_reported", nt + written);
    const lw_site *top = n && all ? all[0].site : NULL;
    *top_distinct = top ? distinct_of(&ps, top) : -1;
    free(all);
    places_free(&ps);
    views_free(&vs);
    return top;
}

static void emit_failures(lw_jw *w) {
    lw_failure f[LW_FAILURES_KEPT];
    int n = lw_failures_get(f, LW_FAILURES_KEPT);
    lw_jw_array(w, "failed_allocations");
    for (int i = 0; i < n; i++) {
        lw_jw_object(w, NULL);
        lw_jw_uint(w, "size", f[i].size);
        lw_jw_str(w, "kind", lw_kind_name((lw_kind)f[i].kind));
        lw_jw_int(w, "device", f[i].device);
        lw_jw_int(w, "result", f[i].result);
        lw_jw_uint(w, "step", f[i].step);
        lw_jw_double(w, "time_s", (double)f[i].time_ns / 1e9);
        lw_jw_uint(w, "site", f[i].site->id);
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
    lw_jw_object(w, "pinned_host");
    lw_jw_str(w, "verdict", lw_verdict_name(h.verdict));
    lw_jw_double(w, "bytes_per_step", h.last.slope);
    lw_jw_array(w, "slope_ci");
    lw_jw_double(w, NULL, h.last.lo);
    lw_jw_double(w, NULL, h.last.hi);
    lw_jw_end(w);
    lw_jw_double(w, "p_value", h.last.p_value);
    lw_jw_uint(w, "points", h.points);
    lw_jw_str(w, "reason", h.reason[0] ? h.reason : "not evaluated yet");
    lw_jw_object(w, "series");
    lw_jw_array(w, "x");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].x);
    lw_jw_end(w);
    lw_jw_array(w, "floor");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].floor);
    lw_jw_end(w);
    lw_jw_end(w);
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
 * interval and the trend test. */
static void emit_fit(lw_jw *w, const lw_growth *l) {
    lw_jw_double(w, "bytes_per_step", l->slope);
    lw_jw_double(w, "bytes_per_second", l->bytes_per_second);
    lw_jw_array(w, "slope_ci");
    lw_jw_double(w, NULL, l->lo);
    lw_jw_double(w, NULL, l->hi);
    lw_jw_end(w);
    lw_jw_double(w, "p_value", l->p_value);
}

/* Growth released at each cycle's end (cycles.h): null unless two cycles or
 * more were seen in the series the verdict comes from. */
static void emit_cycles(lw_jw *w, const lw_growth_state *g) {
    lw_cycles_summary c;
    if (!g->cycles_signal || !lw_cycles_get(&g->cycles_raw, &c)) {
        lw_jw_null(w, "cycles");
        return;
    }
    lw_jw_object(w, "cycles");
    lw_jw_uint(w, "count", c.count);
    lw_jw_double(w, "period_steps", c.period);
    lw_jw_double(w, "rise_bytes_per_step", c.rise_per_step);
    lw_jw_double(w, "peak_bytes", c.peak);
    lw_jw_double(w, "floor_bytes", c.floor);
    lw_jw_double(w, "last_release_step", c.last_release);
    lw_jw_str(w, "signal", g->cycles_signal);
    lw_jw_end(w);
}

static void emit_growth(lw_jw *w, const lw_growth_state *g) {
    const lw_growth *l = &g->last;
    int leak = g->verdict == LW_VERDICT_LEAK;
    lw_jw_object(w, "growth");
    emit_fit(w, l);
    lw_jw_uint(w, "steps", g->steps);
    lw_jw_str(w, "step_source", g->step_source);
    lw_jw_str(w, "signal", g->signal);
    emit_opt_int(w, "signal_device", g->signal_device);
    if (leak)
        lw_jw_double(w, "onset_step", l->onset_x);
    else
        lw_jw_null(w, "onset_step");
    /* The steps the onset's bin covers (the onset is known to a bin). */
    if (leak && isfinite(l->onset_lo) && isfinite(l->onset_hi) && l->onset_hi >= l->onset_lo) {
        lw_jw_array(w, "onset_range");
        lw_jw_double(w, NULL, l->onset_lo);
        lw_jw_double(w, NULL, l->onset_hi);
        lw_jw_end(w);
    } else {
        lw_jw_null(w, "onset_range");
    }
    emit_opt_int(w, "first_leak_step", g->first_leak_step);
    double eta_s, eta_steps;
    lw_growth_oom(g, &eta_s, &eta_steps);
    lw_jw_double(w, "oom_eta_seconds", eta_s);
    lw_jw_double(w, "oom_eta_steps", eta_steps);
    emit_opt_int(w, "device_free_bytes", g->device_free);
    emit_opt_int(w, "device_total_bytes", g->device_total);
    if (!strcmp(g->step_source, "time")) lw_jw_double(w, "interval_seconds", g->interval_s);
    lw_jw_uint(w, "evaluations", g->evaluations);
    lw_jw_uint(w, "leak_verdicts_withdrawn", g->withdrawn);
    /* The end of the run: memory released after the last step (teardown)
     * does not erase growth before it; a decided fit is reported decided. */
    lw_jw_bool(w, "released_at_exit", g->released_bytes >= 0);
    if (g->released_bytes >= 0)
        lw_jw_int(w, "released_at_exit_bytes", g->released_bytes);
    else
        lw_jw_null(w, "released_at_exit_bytes");
    lw_jw_bool(w, "decided_at_exit", g->decided_at_exit);
    /* A marked run's phases without step marks (a validation loop): their
     * time intervals, and whether they gave the verdict (in intervals). */
    lw_jw_uint(w, "unmarked_intervals", g->unmarked_intervals);
    lw_jw_bool(w, "verdict_from_unmarked_phases", g->from_unmarked);
    lw_jw_int(w, "window_bins", l->window);
    lw_jw_uint(w, "steps_per_bin", g->bin_width);
    lw_jw_str(w, "reason", g->reason[0] ? g->reason : "not evaluated yet");
    /* What the run can see: the floor's noise at this bin width, the
     * smallest rate it can call now, and the steps still needed to decide
     * at the current rate (0 once a leak is called; null when nothing
     * grows). */
    lw_jw_double(w, "noise_bytes", l->noise_step);
    lw_jw_double(w, "bin_noise_bytes", l->noise_bin);
    lw_jw_double(w, "detectable_bytes_per_step", l->min_rate);
    lw_jw_double(w, "steps_to_decide", leak ? 0.0 : l->more_steps);
    lw_jw_double(w, "recent_p_value", l->p_recent);
    /* The guard that overruled a significant trend, and its test. */
    if (l->overruled_by) {
        lw_jw_str(w, "overruled_by", l->overruled_by);
        lw_jw_double(w, "overrule_p_value", l->guard_p);
    } else {
        lw_jw_null(w, "overruled_by");
        lw_jw_null(w, "overrule_p_value");
    }
    emit_cycles(w, g);
    emit_pinned_host(w);
    lw_jw_end(w);
}

/* The floor and peak per step, downsampled, as columns (compact, easy to
 * plot). */
static void emit_series(lw_jw *w, const lw_bin *b, int n) {
    lw_jw_object(w, "series");
    lw_jw_array(w, "x");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].x);
    lw_jw_end(w);
    lw_jw_array(w, "time_s");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].t);
    lw_jw_end(w);
    lw_jw_array(w, "floor");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].floor);
    lw_jw_end(w);
    lw_jw_array(w, "peak");
    for (int i = 0; i < n; i++)
        lw_jw_double(w, NULL, b[i].peak);
    lw_jw_end(w);
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
    lw_jw_object(w, "torch");
    lw_jw_str(w, "mode", lw_opt_str(LW_OPT_TORCH_MODE));
    lw_jw_array(w, "devices");
    for (int i = 0; i < n; i++) {
        const lw_torch_device_state *d = &t[i];
        const lw_growth *l = &d->last;
        int leak = d->verdict == LW_VERDICT_LEAK;
        lw_jw_object(w, NULL);
        lw_jw_int(w, "device", d->device);
        lw_jw_str(w, "verdict", lw_verdict_name(d->verdict));
        lw_jw_str(w, "signal", "torch_allocated");
        emit_fit(w, l);
        if (leak)
            lw_jw_double(w, "onset_step", l->onset_x);
        else
            lw_jw_null(w, "onset_step");
        emit_opt_int(w, "first_leak_step", d->first_leak_step);
        lw_jw_uint(w, "points", d->points);
        lw_jw_int(w, "allocated_bytes", d->allocated);
        lw_jw_int(w, "reserved_bytes", d->reserved);
        emit_opt_int(w, "device_free_bytes", d->device_free);
        int64_t avail = available_of(d);
        emit_opt_int(w, "available_bytes", avail);
        lw_jw_double(w, "oom_eta_steps",
                     leak && avail >= 0 && l->slope > 0 ? (double)avail / l->slope : NAN);
        lw_jw_double(w, "oom_eta_seconds",
                     leak && avail >= 0 && l->bytes_per_second > 0
                         ? (double)avail / l->bytes_per_second
                         : NAN);
        lw_jw_str(w, "reason", d->reason[0] ? d->reason : "not evaluated yet");
        const lw_bin *b = bins + (size_t)i * TORCH_BINS;
        lw_jw_object(w, "series");
        static const char *const cols[] = {"x", "time_s", "allocated", "reserved"};
        for (int c = 0; c < 4; c++) {
            lw_jw_array(w, cols[c]);
            for (int k = 0; k < nb[i]; k++)
                lw_jw_double(w, NULL,
                             c == 0   ? b[k].x
                             : c == 1 ? b[k].t
                             : c == 2 ? b[k].floor
                                      : b[k].peak);
            lw_jw_end(w);
        }
        lw_jw_end(w);
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
    lw_jw_strn(w, "command", n ? buf : NULL, n);
}

/* Which process of a distributed job this is, on which device, and where its
 * final report goes (for 'leakwatch top' when the job ends). */
static void emit_rank(lw_jw *w) {
    lw_rank_info r;
    lw_rank_get(&r);
    emit_opt_int(w, "rank", r.rank);
    emit_opt_int(w, "local_rank", r.local_rank);
    emit_opt_int(w, "world_size", r.world_size);
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
    emit_opt_int(w, "device", dev);
    char path[PATH_MAX];
    lw_report_final_path(path, sizeof path);
    lw_jw_str(w, "report_path", path[0] ? path : NULL);
}

static const char *end_signal;

void lw_report_set_end_signal(const char *name) {
    end_signal = name;
}

static _Atomic int attached_session;

void lw_report_set_attached(int attached) {
    attached_session = attached;
}

/* growth.reason of a "nothing_seen" report: why, and what to do. */
#define NOTHING_SEEN_REASON                                                                        \
    "no CUDA allocation seen since the attach (calls through pointers looked up before it "        \
    "are not seen): start the job under 'leakwatch run'"

static int distinct_for(lw_symtab *syms, const lw_growth_state *g, const lw_site *site);

int lw_report_emit(FILE *f, const char *reason) {
    lw_jw w;
    lw_jw_init(&w, f, 1);
    /* Gathered and written in large pieces: the report's stream is
     * unbuffered (atomic_file.c says why). */
    char *wbuf = malloc(REPORT_WRITE_BUF);
    lw_jw_buffer(&w, wbuf, wbuf ? REPORT_WRITE_BUF : 0);
    lw_symtab *syms = lw_symtab_new();
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    uint64_t now = lw_now_ns();
    double uptime = (double)(now - lw_start_time_ns()) / 1e9;

    lw_jw_object(&w, NULL);
    lw_jw_str(&w, "tool", "leakwatch");
    lw_jw_str(&w, "version", LEAKWATCH_VERSION);
    lw_jw_int(&w, "pid", getpid());
    emit_command(&w);
    lw_jw_str(&w, "host", host);
    emit_rank(&w);
    lw_jw_str(&w, "reason", reason);
    if (end_signal && !strcmp(reason, "signal")) lw_jw_str(&w, "end_signal", end_signal);
    lw_jw_int(&w, "written_at", (int64_t)time(NULL));
    lw_jw_double(&w, "duration_s", uptime);
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
    lw_jw_str(&w, "verdict", lw_verdict_name(g.verdict));
    emit_totals(&w);
    emit_growth(&w, &g);
    emit_series(&w, bins, nbins);
    emit_torch(&w);
    /* The answer (answer.c) is chosen before the sites are written, so that
     * its numbers are those of the named site's entry. */
    lw_run_answer ans;
    lw_run_answer_from(&ans, &g);
    answer_site = ans.site;
    answer_live = -1;
    int top_distinct = -1;
    const lw_site *top = emit_sites(&w, syms, g.verdict == LW_VERDICT_LEAK, &top_distinct);
    if (answer_live >= 0 && isfinite(ans.a.where_live)) ans.a.where_live = (double)answer_live;
    /* A largest site that holds nothing by the time its entry is written
     * (freed meanwhile by a thread still running at exit) is not named: the
     * command, reading that entry, does not name it either. */
    if (answer_live == 0 && g.verdict != LW_VERDICT_LEAK && !ans.torch) {
        ans.a.where = NULL;
        ans.a.where_live = NAN;
    }
    answer_site = NULL;
    /* The site the answer names (answer.c, the one rule every output
     * follows), and its place to look (the same as that site's own "where"):
     * under PyTorch's signal, the first site found in its allocation history,
     * as the helper described it. The exit summary renders this answer. */
    lw_run_answer_keep(&ans);
    if (ans.torch && lw_torch_info_answer(&w)) {
    } else if (ans.site || top) {
        const lw_site *named = ans.site ? ans.site : top;
        frame_list l;
        collect_frames(&l, syms, named);
        lw_jw_object(&w, "answer");
        lw_jw_uint(&w, "site", named->id);
        emit_where(&w, &l, named == top ? top_distinct : distinct_for(syms, &g, named));
        lw_jw_end(&w);
        free(l.f);
    } else {
        lw_jw_null(&w, "answer");
    }
    emit_failures(&w);
    lw_jw_object(&w, "tracker");
    lw_jw_uint(&w, "live_records", lw_live_records());
    lw_jw_uint(&w, "overhead_bytes", lw_live_overhead_bytes());
    lw_jw_uint(&w, "untracked_allocations", lw_record_untracked());
    lw_jw_uint(&w, "pooled_allocations", lw_sites_pooled());
    lw_jw_uint(&w, "reused_without_free", lw_record_reused_unseen());
    lw_jw_uint(&w, "truncated_stacks", lw_record_truncated_sites());
    lw_stack_stats ss;
    lw_stack_get_stats(&ss);
    lw_jw_bool(&w, "stacks", lw_opt_int(LW_OPT_STACKS) != 0);
    lw_jw_str(&w, "unwinder", ss.unwinder);
    lw_jw_uint(&w, "stacks_by_fallback_unwinder", ss.fallback);
    lw_jw_uint(&w, "stacks_verified", ss.verified);
    lw_jw_uint(&w, "stack_mismatches", ss.mismatches);
    lw_jw_uint(&w, "guessed_target_calls", lw_real_guessed_calls());
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

/* The distinguishing frame of site among the sites shown (-1: none), as the
 * report for state g names it. */
static int distinct_for(lw_symtab *syms, const lw_growth_state *g, const lw_site *site) {
    site_views vs;
    views_load(&vs, g->verdict == LW_VERDICT_LEAK);
    size_t nall = 0;
    ranked_site *all = rank_sites(&vs, &nall);
    site_places ps;
    places_load(&ps, syms, &vs, all, nall < sites_shown() ? nall : sites_shown());
    free(all);
    int d = distinct_of(&ps, site);
    places_free(&ps);
    views_free(&vs);
    return d;
}

void lw_report_site_label(const lw_site *site, char *out, size_t n) {
    /* LEAKWATCH_STACKS=0: one site for everything, with no frame to name. */
    if (!lw_opt_int(LW_OPT_STACKS)) {
        snprintf(out, n, "all allocations");
        return;
    }
    snprintf(out, n, "site %u", site->id);
    lw_symtab *syms = lw_symtab_new();
    /* The sites leaking as the report would say (its verdict now), for the
     * frame that tells this one apart when its place is shared. */
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    int distinct = distinct_for(syms, &g, site);
    frame_list l;
    collect_frames(&l, syms, site);
    int k = pick_where(&l, NULL);
    if (k >= 0) where_text(&l, k, distinct, out, n);
    free(l.f);
    lw_symtab_free(syms);
}

int lw_report_lead_site(int leak, const lw_site **site, double *rate) {
    /* The report's first site (rank_sites, by_relevance), so that every
     * output names the site the report puts first, also at ties. */
    site_views vs;
    views_load(&vs, leak);
    size_t n = 0;
    ranked_site *all = rank_sites(&vs, &n);
    const lw_site *top = n && all ? all[0].site : NULL;
    /* Live as ranked, not as now: a site freed meanwhile (another thread
     * still allocating at exit) left the answer without a site while the
     * report, ranked again, named its first one. */
    int rc = !top ? -1 : all[0].leak ? 1 : all[0].live_bytes > 0 ? 0 : -1;
    if (rc == 1) *rate = all[0].slope;
    *site = rc >= 0 ? top : NULL;
    free(all);
    views_free(&vs);
    return rc;
}
