/* Renderers of lw_model: text for people, normalized JSON for scripts, one
 * self-contained HTML page, and the compact screen of 'leakwatch top'. */
#ifndef LW_CLI_RENDER_H
#define LW_CLI_RENDER_H

#include "cli_model.h"

#include <stdio.h>

typedef struct {
    size_t top_sites;  /* sites shown (default 10) */
    size_t max_frames; /* frames shown per site before compacting (default 12) */
    int full_stacks;   /* 1: every frame */
} lw_render_opts;

void lw_render_opts_default(lw_render_opts *o);

/* One report, or several (one per rank) with a summary first. */
void lw_render_text(FILE *out, const lw_model *ms, size_t n, const lw_render_opts *o);
/* Normalized JSON: one object for one report, an array for several. */
int lw_render_json(FILE *out, const lw_model *ms, size_t n);
void lw_render_html(FILE *o, const lw_model *ms, size_t n, const lw_render_opts *ro);

/* A short verdict line: "LEAK", "no leak", "inconclusive", "unknown". */
const char *lw_mverdict_label(lw_mverdict v);

/* The stack of a site, innermost first: Python frames first (they are what a
 * user wrote), then native frames, with runs of frames from one library that
 * carry no source information folded into one line. Calls emit(label, folded,
 * ctx) per line; folded > 0 means the line stands for that many frames. */
void lw_stack_lines(const lw_m_site *s, const lw_render_opts *o,
                    void (*emit)(const char *label, int is_python, size_t folded, void *ctx),
                    void *ctx);

#endif
