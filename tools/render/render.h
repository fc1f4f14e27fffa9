/* SPDX-License-Identifier: Apache-2.0 */
/* Renderers of lw_model: text for people, normalized JSON for scripts, one
 * self-contained HTML page, and the compact screen of 'leakwatch top'
 * (render_*.c). */
#ifndef LW_RENDER_H
#define LW_RENDER_H

#include "model.h"

#include <stdio.h>

typedef struct {
    size_t top_sites;  /* sites shown (default 10) */
    size_t max_frames; /* frames shown per site before compacting (default 12) */
    int full_stacks;   /* 1: every frame */
    int details;       /* several reports: 1 shows each one's details after the merged view */
    double only_rank;  /* several reports: the details of this rank only (NAN: none) */
    int short_paths;   /* 1: files by their base name, as the place to look is named (top) */
} lw_render_opts;

void lw_render_opts_default(lw_render_opts *o);

/* One report, or several (one per rank) with a summary first. */
void lw_render_text(FILE *out, const lw_model *ms, size_t n, const lw_render_opts *o);
/* Normalized JSON: one object for one report, an array for several. */
int lw_render_json(FILE *out, const lw_model *ms, size_t n);
void lw_render_html(FILE *o, const lw_model *ms, size_t n, const lw_render_opts *ro);

/* A short verdict line: "LEAK", "no leak", "inconclusive", "unknown". */
const char *lw_mverdict_label(lw_verdict v);

/* The stack of a site as a traceback: outermost first, the frame the site's
 * label names first marked (marked LW_STACK_HERE: the place to look, or the
 * caller of a shared wrapper when the label is "stash (via device_alloc,
 * ...)", whose own frame is then marked LW_STACK_VIA), the interpreter's,
 * libffi's, libc's start-up, leakwatch's and the CUDA libraries' internals
 * folded (unless o->full_stacks). Calls emit(label, is_python, folded,
 * marked, ctx) per line; folded > 0 means the line stands for that many
 * frames. */
enum { LW_STACK_HERE = 1, LW_STACK_VIA = 2 };
void lw_stack_lines(const lw_m_site *s, const lw_render_opts *o,
                    void (*emit)(const char *label, int is_python, size_t folded, int marked,
                                 void *ctx),
                    void *ctx);

#endif
