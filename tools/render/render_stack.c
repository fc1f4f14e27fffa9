/* SPDX-License-Identifier: Apache-2.0 */
/* Turning a site's frames into the lines a person reads, the way Python shows
 * a traceback: outermost first, down to the allocation, the place to look
 * marked. The report keeps Python frames where the interpreter's evaluation
 * frames stood, so reading the frames backwards interleaves them correctly.
 * What nobody needs by default (the interpreter, libffi and ctypes' glue,
 * libc's start-up, leakwatch and the CUDA libraries' internals, long runs of
 * one library without source lines) is folded into "... N frames in libfoo";
 * --full-stacks shows everything. */
#include "render.h"

#include "cli.h"
#include "where.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void lw_render_opts_default(lw_render_opts *o) {
    o->top_sites = 10;
    o->max_frames = 12;
    o->full_stacks = 0;
    o->details = 0;
    o->short_paths = 0;
    o->only_rank = NAN;
}

static int is_python(const lw_m_frame *f) {
    return f->kind && !strcmp(f->kind, "python");
}

static lw_frame_ref ref_of(const lw_m_frame *f) {
    lw_frame_ref r = {is_python(f), f->function, f->file, f->module,
                      isfinite(f->line) && f->line > 0 && f->line < 1e9 ? (int)f->line : 0};
    return r;
}

/* A frame that always gets its own line: one with a source position, or one
 * in the program itself rather than a shared library (the user's own code).
 * Frames inside a library (libtorch) are folded by run. */
static int keep(const lw_m_frame *f) {
    if (f->file && isfinite(f->line)) return 1;
    return f->module && f->function && !strstr(f->module, ".so");
}

static int same_module(const lw_m_frame *a, const lw_m_frame *b) {
    return a->module && b->module && !strcmp(a->module, b->module);
}

static const char *base_name(const char *p) {
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

typedef struct {
    char label[512];
    int python, marked;
    size_t folded; /* > 0: stands for that many frames */
} line_t;

typedef struct {
    line_t *l;
    size_t n, cap;
} lines_t;

static line_t *add(lines_t *ls) {
    if (ls->n == ls->cap) {
        size_t cap = ls->cap ? ls->cap * 2 : 32;
        line_t *l = realloc(ls->l, cap * sizeof *l);
        if (!l) return NULL;
        ls->l = l, ls->cap = cap;
    }
    line_t *l = &ls->l[ls->n++];
    memset(l, 0, sizeof *l);
    return l;
}

/* "... 3 frames in libc.so.6, python3.11" for frames[lo..hi], named by
 * their modules in order of appearance (three at most). */
static void fold_line(lines_t *ls, const lw_m_site *s, size_t lo, size_t hi) {
    line_t *l = add(ls);
    if (!l) return;
    size_t count = hi - lo + 1;
    const char *mods[3] = {0};
    int nm = 0, more = 0;
    for (size_t i = hi + 1; i-- > lo;) {
        const char *m = base_name(s->frames[i].module);
        if (!m) m = is_python(&s->frames[i]) ? "Python" : "?";
        int seen = 0;
        for (int k = 0; k < nm; k++)
            seen |= !strcmp(mods[k], m);
        if (seen) continue;
        if (nm < 3)
            mods[nm++] = m;
        else
            more = 1;
    }
    char names[300] = "", safe[120];
    for (int k = 0; k < nm; k++) {
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "",
                 lw_safe_text(mods[k], safe, sizeof safe));
    }
    /* The outermost run of a stack: the process or thread starting. */
    int startup = hi + 1 == s->nframes;
    snprintf(l->label, sizeof l->label, "... %zu frame%s %s%s%s%s", count, count == 1 ? "" : "s",
             startup ? "of start-up (" : "in ", names, more ? ", ..." : "", startup ? ")" : "");
    l->folded = count;
}

static void frame_line(lines_t *ls, const lw_m_site *s, size_t i, int marked, int short_paths) {
    line_t *l = add(ls);
    if (!l) return;
    lw_m_frame f = s->frames[i];
    if (short_paths) f.file = base_name(f.file);
    lw_frame_label(&f, l->label, sizeof l->label);
    l->python = is_python(&s->frames[i]);
    l->marked = marked;
}

void lw_stack_lines(const lw_m_site *s, const lw_render_opts *o,
                    void (*emit)(const char *label, int is_python, size_t folded, int marked,
                                 void *ctx),
                    void *ctx) {
    if (!s->nframes) return;
    char where[512];
    /* The frame the headline names first gets the mark (LW_STACK_HERE): the
     * caller of a shared wrapper when the label is "stash (via
     * device_alloc, ...)"; the wrapper's own frame, the place to look inside
     * it, is shown too, as the way there (LW_STACK_VIA). */
    int mark = lw_model_where(s, where, sizeof where), via = -1;
    int distinct = lw_model_where_distinct(s, mark);
    if (distinct >= 0) {
        via = mark;
        mark = distinct;
    }
    const char *uc = lw_model_user_code();
    lw_frame_class *cls = malloc(s->nframes * sizeof *cls);
    if (!cls) return;
    for (size_t i = 0; i < s->nframes; i++) {
        lw_frame_ref r = ref_of(&s->frames[i]);
        cls[i] = lw_frame_classify(&r, uc);
    }
    lines_t ls = {0};
    /* Outermost first: from the last frame down to frame 0. */
    size_t i = s->nframes;
    while (i-- > 0) {
        const lw_m_frame *f = &s->frames[i];
        int marked = (int)i == mark ? LW_STACK_HERE : (int)i == via ? LW_STACK_VIA : 0;
        if (o->full_stacks || marked) {
            frame_line(&ls, s, i, marked, o->short_paths);
            continue;
        }
        if (lw_frame_class_is_noise(cls[i])) {
            /* The CUDA function the code above called stays visible: it is
             * the allocation itself. */
            if (cls[i] == LW_FRAME_CUDA && (i + 1 == s->nframes || cls[i + 1] != LW_FRAME_CUDA)) {
                frame_line(&ls, s, i, 0, o->short_paths);
                continue;
            }
            size_t lo = i;
            while (lo > 0 && lw_frame_class_is_noise(cls[lo - 1]) && (int)(lo - 1) != mark &&
                   (int)(lo - 1) != via &&
                   !(cls[lo - 1] == LW_FRAME_CUDA && cls[lo] != LW_FRAME_CUDA))
                lo--;
            fold_line(&ls, s, lo, i);
            i = lo;
            continue;
        }
        /* A run of native frames from one library without source lines. */
        size_t lo = i;
        while (!is_python(f) && !keep(f) && lo > 0 && !is_python(&s->frames[lo - 1]) &&
               !keep(&s->frames[lo - 1]) && same_module(f, &s->frames[lo - 1]) &&
               (int)(lo - 1) != mark && (int)(lo - 1) != via &&
               !lw_frame_class_is_noise(cls[lo - 1]))
            lo--;
        if (i - lo + 1 >= 3) {
            /* The outermost frame says where the run enters the library. */
            frame_line(&ls, s, i, 0, o->short_paths);
            fold_line(&ls, s, lo, i - 1);
            i = lo;
        } else {
            frame_line(&ls, s, i, 0, o->short_paths);
        }
    }
    free(cls);
    /* Too many native lines: the innermost ones beyond the limit (below the
     * place to look, and the wrapper's frame under it) fold into one line;
     * Python lines always show. */
    size_t native = 0, cut = ls.n;
    int last_mark = via >= 0 ? LW_STACK_VIA : LW_STACK_HERE;
    int seen_mark = mark < 0;
    for (size_t k = 0; k < ls.n && !o->full_stacks; k++) {
        if (!ls.l[k].python && !ls.l[k].folded && !ls.l[k].marked && ++native > o->max_frames &&
            seen_mark) {
            cut = k;
            break;
        }
        seen_mark |= ls.l[k].marked == last_mark;
    }
    for (size_t k = 0; k < cut; k++)
        emit(ls.l[k].label, ls.l[k].python, ls.l[k].folded, ls.l[k].marked, ctx);
    if (cut < ls.n) {
        size_t rest = 0;
        for (size_t k = cut; k < ls.n; k++)
            rest += ls.l[k].folded ? ls.l[k].folded : 1;
        char label[700];
        snprintf(label, sizeof label,
                 "... %zu more frame%s (innermost: %s; --full-stacks shows all)", rest,
                 rest == 1 ? "" : "s", ls.l[ls.n - 1].label);
        emit(label, 0, rest, 0, ctx);
    }
    free(ls.l);
}
