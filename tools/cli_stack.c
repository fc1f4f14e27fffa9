/* Turning a site's frames into the lines a person reads: Python frames first,
 * native frames after, with uninformative runs folded. A PyTorch stack is 60
 * native frames of which a handful matter; printing all of them hides the one
 * line of the user's code that allocates. */
#include "cli_render.h"

#include "cli.h"

#include <math.h>
#include <string.h>

void lw_render_opts_default(lw_render_opts *o) {
    o->top_sites = 10;
    o->max_frames = 12;
    o->full_stacks = 0;
}

static int is_python(const lw_m_frame *f) {
    return f->kind && !strcmp(f->kind, "python");
}

/* A frame that always gets its own line: one with a source position, or one
 * in the program itself rather than a shared library (the user's own code).
 * Frames inside a library (libtorch, libcudart, libc) are folded by run: the
 * first one of a run says where the run enters the library. */
static int keep(const lw_m_frame *f) {
    if (f->file && isfinite(f->line)) return 1;
    return f->module && f->function && !strstr(f->module, ".so");
}

static int same_module(const lw_m_frame *a, const lw_m_frame *b) {
    return a->module && b->module && !strcmp(a->module, b->module);
}

void lw_stack_lines(const lw_m_site *s, const lw_render_opts *o,
                    void (*emit)(const char *label, int is_python, size_t folded, void *ctx),
                    void *ctx) {
    char label[512];
    for (size_t i = 0; i < s->nframes; i++) {
        if (!is_python(&s->frames[i])) continue;
        lw_frame_label(&s->frames[i], label, sizeof label);
        emit(label, 1, 0, ctx);
    }
    size_t shown = 0, i = 0;
    while (i < s->nframes) {
        const lw_m_frame *f = &s->frames[i];
        if (is_python(f)) {
            i++;
            continue;
        }
        if (!o->full_stacks && shown >= o->max_frames) {
            size_t rest = 0;
            const lw_m_frame *last = NULL;
            for (size_t j = i; j < s->nframes; j++)
                if (!is_python(&s->frames[j])) rest++, last = &s->frames[j];
            char tail[300] = "?";
            if (last) lw_frame_label(last, tail, sizeof tail);
            snprintf(label, sizeof label, "... %zu more native frame%s (outermost: %s)", rest,
                     rest == 1 ? "" : "s", tail);
            emit(label, 0, rest, ctx);
            return;
        }
        /* A run of native frames from one library without source lines. */
        size_t j = i + 1;
        while (!o->full_stacks && !keep(f) && j < s->nframes && !is_python(&s->frames[j]) &&
               !keep(&s->frames[j]) && same_module(f, &s->frames[j]))
            j++;
        size_t run = j - i;
        lw_frame_label(f, label, sizeof label);
        emit(label, 0, 0, ctx);
        shown++;
        if (run >= 3) {
            const char *mod = strrchr(f->module, '/');
            char safe[200];
            lw_safe_text(mod ? mod + 1 : f->module, safe, sizeof safe);
            snprintf(label, sizeof label, "... %zu more frames in %s", run - 1, safe);
            emit(label, 0, run - 1, ctx);
            shown++;
            i = j;
        } else {
            i++;
        }
    }
}
