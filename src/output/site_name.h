/* SPDX-License-Identifier: Apache-2.0 */
/* The name shown for a call site: its frames as every output shows them
 * (native frames symbolised, Python frames where the interpreter's stand),
 * the place to look among them (where.h), and, when leaking and
 * non-leaking sites share that place, the frame that tells them apart. The
 * report writes these; the live warning, the exit summary and Prometheus
 * name a site with lw_site_label, which gives the report's label. */
#ifndef LW_SITE_NAME_H
#define LW_SITE_NAME_H

#include "site_rank.h"
#include "symbolize.h"
#include "where.h"

#include <stddef.h>
#include <stdint.h>

/* One frame of a site's stack as a report shows it: native (with its
 * symbol, possibly a function inlined there) or Python. */
typedef struct {
    lw_frame_ref ref;
    uintptr_t ip;         /* native */
    const lw_symbol *sym; /* native: NULL when unknown */
    int inlined;
} lw_site_frame;

typedef struct {
    lw_site_frame *f;
    size_t n, cap;
} lw_site_frames;

/* The frames of s, innermost first (syms: the report's symbol table, NULL
 * for no symbols). Free with lw_site_frames_free. */
void lw_site_frames_collect(lw_site_frames *l, lw_symtab *syms, const lw_site *s);
void lw_site_frames_free(lw_site_frames *l);

/* The place to look among them (where.h): its index, or -1; *why (when not
 * NULL) says why that frame. */
int lw_site_frames_where(const lw_site_frames *l, const char **why);

/* The label every output shows for a site whose place to look is frame k:
 * the place's label, or, with a distinguishing frame (distinct >= 0), that
 * frame by way of the place. Returns out. */
char *lw_site_frames_label(const lw_site_frames *l, int k, int distinct, char *out, size_t n);

/* "in backward, called from train.py:31" for a site made on autograd's
 * thread: the innermost frame of the thread waiting in backward() outside
 * torch's and leakwatch's own Python code. 0 (out untouched) for others. */
int lw_site_backward_note(const lw_site *s, char *out, size_t n);

/* The distinguishing frame of every site whose place to look is shared by
 * leaking and non-leaking sites (where.h, lw_where_apart), over the first
 * `shown` sites of all (lw_sites_ranked): the sites the report writes, so
 * that the command, which sees only those, applies the same rule to the
 * same set. Computed per report, warning or summary, never on the
 * allocation path. */
struct lw_site_place;
typedef struct {
    struct lw_site_place *p;
    size_t n;
} lw_site_places;
void lw_site_places_load(lw_site_places *ps, lw_symtab *syms, const lw_site_views *vs,
                         const lw_ranked_site *all, size_t shown);
/* The distinguishing frame of s (-1: none). */
int lw_site_places_distinct(const lw_site_places *ps, const lw_site *s);
void lw_site_places_free(lw_site_places *ps);

/* The distinguishing frame of site among the sites the report for state g
 * writes (-1: none). */
int lw_site_distinct(lw_symtab *syms, const lw_growth_state *g, const lw_site *site);

/* The site's place to look (where.h), as every output names it:
 * "train.py:27 in train"; "site N" when it has no frame; "all allocations"
 * under LEAKWATCH_STACKS=0. Symbolises the site's frames (with source
 * lines, like the report). */
void lw_site_label(const lw_site *site, char *out, size_t n);

#endif
