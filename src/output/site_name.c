/* SPDX-License-Identifier: Apache-2.0 */
/* The name shown for a call site (site_name.h). */
#include "site_name.h"

#include "options.h"
#include "pystack.h"
#include "record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void push(lw_site_frames *l, lw_site_frame e) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        lw_site_frame *f = realloc(l->f, cap * sizeof *f);
        if (!f) return;
        l->f = f, l->cap = cap;
    }
    l->f[l->n++] = e;
}

static void push_symbol(lw_site_frames *l, const lw_symbol *s, uintptr_t ip, int inlined) {
    lw_site_frame e = {
        {0, s ? s->function : NULL, s ? s->file : NULL, s ? s->module : NULL, s ? s->line : 0},
        ip,
        s,
        inlined};
    push(l, e);
}

/* The frame at ip, preceded by the functions inlined there, innermost first. */
static void push_native(lw_site_frames *l, lw_symtab *syms, uintptr_t ip) {
    const lw_symbol *s = syms ? lw_symtab_lookup(syms, ip) : NULL;
    for (int k = 0; s && k < s->ninlined; k++)
        push_symbol(l, &s->inlined[k], ip, 1);
    push_symbol(l, s, ip, 0);
}

static void push_python(lw_site_frames *l, const lw_pystack_frame *f) {
    lw_site_frame e = {{1, f->function, f->file, NULL, f->line > 0 ? f->line : 0}, 0, NULL, 0};
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

int lw_site_backward_note(const lw_site *s, char *out, size_t n) {
    const lw_pystack *py = lw_site_in_backward(s) ? lw_pystack_of(s) : NULL;
    if (!py || !py->n) return 0;
    const lw_pystack_frame *f = backward_caller(py);
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    snprintf(out, n, "in backward, called from %s:%d", base ? base + 1 : f->file, f->line);
    return 1;
}

/* The Python frames of the next native evaluation call: from *next up to and
 * including the first one that entered it. */
static void push_python_group(lw_site_frames *l, const lw_pystack *py, int *next) {
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
void lw_site_frames_collect(lw_site_frames *l, lw_symtab *syms, const lw_site *s) {
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

void lw_site_frames_free(lw_site_frames *l) {
    free(l->f);
    memset(l, 0, sizeof *l);
}

/* The frames as where.h takes them (NULL when there are none). */
static lw_frame_ref *refs_of(const lw_site_frames *l) {
    lw_frame_ref *refs = l->n ? malloc(l->n * sizeof *refs) : NULL;
    for (size_t i = 0; refs && i < l->n; i++)
        refs[i] = l->f[i].ref;
    return refs;
}

/* The place to look among a site's frames (where.h): index or -1. */
int lw_site_frames_where(const lw_site_frames *l, const char **why) {
    lw_frame_ref *refs = refs_of(l);
    if (!refs) return -1;
    int k = lw_where_pick(refs, l->n, lw_opt_str(LW_OPT_USER_CODE), why);
    free(refs);
    return k;
}

/* The label every output shows for a site: its place to look, or, when that
 * place is shared with sites of the other kind, the frame that tells it
 * apart by way of the place (distinct >= 0). */
char *lw_site_frames_label(const lw_site_frames *l, int k, int distinct, char *out, size_t n) {
    if (distinct >= 0 && (size_t)distinct < l->n)
        return lw_where_label_via(&l->f[distinct].ref, &l->f[k].ref, out, n);
    return lw_where_label(&l->f[k].ref, out, n);
}

/* The distinguishing frame of every site whose place to look is shared by
 * leaking and non-leaking sites (where.h, lw_where_apart): computed once per
 * report, warning or summary from the set of sites the report writes, never
 * on the allocation path, so that every view names the same frame. */
typedef struct lw_site_place {
    const lw_site *site;
    int leak;
    int distinct;  /* frame index, or -1 */
    double weight; /* leaking: its growth per step; else its live bytes */
    char key[256]; /* the place's label: sites that may share it sort together */
} site_place;

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

/* One group of sites with the same label of their place, leaking and not,
 * told apart by where.h's rule (lw_where_apart_sites), the most relevant
 * first: the budget, LW_WHERE_APART_BUDGET pairs per report, keeps a wrapper
 * shared by thousands of sites, many of them leaking, from holding the
 * report up; beyond it (the least relevant sites, as ordered above), sites
 * keep their plain place. */
static void places_apart(site_place *g, size_t n, lw_symtab *syms, long *budget) {
    qsort(g, n, sizeof *g, by_weight);
    lw_site_frames *ls = calloc(n, sizeof *ls);
    size_t *nf = calloc(n, sizeof *nf);
    int *leak = calloc(n, sizeof *leak), *distinct = calloc(n, sizeof *distinct);
    lw_frame_ref *refs = NULL;
    if (ls && nf && leak && distinct) {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            lw_site_frames_collect(&ls[i], syms, g[i].site);
            nf[i] = ls[i].n;
            leak[i] = g[i].leak;
            total += ls[i].n;
        }
        refs = total ? malloc(total * sizeof *refs) : NULL;
        for (size_t i = 0, k = 0; refs && i < n; i++)
            for (size_t j = 0; j < ls[i].n; j++)
                refs[k++] = ls[i].f[j].ref;
        if ((refs || !total) &&
            !lw_where_apart_sites(refs, nf, leak, n, lw_opt_str(LW_OPT_USER_CODE), budget,
                                  distinct))
            for (size_t i = 0; i < n; i++)
                g[i].distinct = distinct[i];
    }
    for (size_t i = 0; ls && i < n; i++)
        lw_site_frames_free(&ls[i]);
    free(ls);
    free(nf);
    free(leak);
    free(distinct);
    free(refs);
}

/* Over the sites the report writes (the first `shown` of all, ranked): the
 * cost stays that of the report however many sites the job has, and the
 * command, which sees those sites only, applies the same rule to the same
 * set. */
void lw_site_places_load(lw_site_places *ps, lw_symtab *syms, const lw_site_views *vs,
                         const lw_ranked_site *all, size_t shown) {
    memset(ps, 0, sizeof *ps);
    if (!vs->n || !all || !shown) return; /* no leaking site: no place to tell apart */
    size_t n = 0;
    site_place *p = calloc(shown, sizeof *p);
    if (!p) return;
    for (size_t i = 0; i < shown; i++) {
        const lw_site *s = all[i].site;
        lw_site_frames l;
        lw_site_frames_collect(&l, syms, s);
        int k = lw_site_frames_where(&l, NULL);
        if (k >= 0) {
            p[n] = (site_place){s, all[i].leak, -1,
                                all[i].leak ? all[i].slope : (double)all[i].live_bytes, ""};
            lw_where_label(&l.f[k].ref, p[n].key, sizeof p[n].key);
            n++;
        }
        lw_site_frames_free(&l);
    }
    qsort(p, n, sizeof *p, by_key);
    long budget = LW_WHERE_APART_BUDGET;
    for (size_t a = 0, b; a < n; a = b) {
        int mixed = 0;
        for (b = a + 1; b < n && !strcmp(p[a].key, p[b].key); b++)
            mixed |= p[b].leak != p[a].leak;
        if (mixed) places_apart(&p[a], b - a, syms, &budget);
    }
    qsort(p, n, sizeof *p, by_place_site);
    ps->p = p, ps->n = n;
}

int lw_site_places_distinct(const lw_site_places *ps, const lw_site *s) {
    site_place key = {.site = s};
    const site_place *p = ps->n ? bsearch(&key, ps->p, ps->n, sizeof *ps->p, by_place_site) : NULL;
    return p ? p->distinct : -1;
}

void lw_site_places_free(lw_site_places *ps) {
    free(ps->p);
}

/* The distinguishing frame of site among the sites shown (-1: none), as the
 * report for state g names it. */
int lw_site_distinct(lw_symtab *syms, const lw_growth_state *g, const lw_site *site) {
    lw_site_views vs;
    lw_site_views_load(&vs, g->verdict == LW_VERDICT_LEAK);
    size_t nall = 0;
    lw_ranked_site *all = lw_sites_ranked(&vs, &nall);
    lw_site_places ps;
    lw_site_places_load(&ps, syms, &vs, all, nall < lw_sites_shown() ? nall : lw_sites_shown());
    free(all);
    int d = lw_site_places_distinct(&ps, site);
    lw_site_places_free(&ps);
    lw_site_views_free(&vs);
    return d;
}

void lw_site_label(const lw_site *site, char *out, size_t n) {
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
    int distinct = lw_site_distinct(syms, &g, site);
    lw_site_frames l;
    lw_site_frames_collect(&l, syms, site);
    int k = lw_site_frames_where(&l, NULL);
    if (k >= 0) lw_site_frames_label(&l, k, distinct, out, n);
    lw_site_frames_free(&l);
    lw_symtab_free(syms);
}
