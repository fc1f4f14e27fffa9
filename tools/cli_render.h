/* SPDX-License-Identifier: Apache-2.0 */
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
const char *lw_mverdict_label(lw_mverdict v);

/* The stack of a site as a traceback: outermost first, the place to look
 * marked, the interpreter's, libffi's, libc's start-up, leakwatch's and the
 * CUDA libraries' internals folded (unless o->full_stacks). Calls
 * emit(label, is_python, folded, marked, ctx) per line; folded > 0 means the
 * line stands for that many frames. */
void lw_stack_lines(const lw_m_site *s, const lw_render_opts *o,
                    void (*emit)(const char *label, int is_python, size_t folded, int marked,
                                 void *ctx),
                    void *ctx);

/* Several reports as one (cli_merge.c). */
typedef struct {
    char where[512]; /* the place to look */
    size_t *members; /* indices of the reports where it leaks */
    double *rates;   /* its growth per step in each */
    size_t n;
} lw_merge_group;
/* Report indices, leaking ones first, then by rank. */
void lw_merge_order(const lw_model *ms, size_t n, size_t *order);
/* The leaking places, grouped across reports, in order of first appearance. */
size_t lw_merge_groups(const lw_model *ms, size_t n, lw_merge_group **out);
void lw_merge_free(lw_merge_group *g, size_t ng);
/* "ranks 0–7", "ranks 1, 3", "rank 2", or the files' names without ranks. */
void lw_merge_ranks_text(const lw_model *ms, const size_t *members, size_t k, char *out, size_t n);
/* "train.py:27 in train leaks on ranks 0–7, +512 B/step each". */
void lw_merge_group_line(const lw_model *ms, const lw_merge_group *g, char *out, size_t n);

#endif
