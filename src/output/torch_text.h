/* SPDX-License-Identifier: Apache-2.0 */
/* The library's words for what the PyTorch helper handed over as values
 * (torch_values.h): a place's label and the sentence of what keeps a leak
 * alive (a site's "owner": who holds its tensors, or that no one was found
 * and what was searched), and the summary's label of the sites, composed
 * once here, for the report's where.label and owner.text, the exit line and
 * the text report. */
#ifndef LW_TORCH_TEXT_H
#define LW_TORCH_TEXT_H

#include "torch_values.h"

#include <stddef.h>

/* A place's label from its where object's file, line and function, as every
 * frame is labelled (where.c: "train.py:27 in train"). Returns out. */
char *lw_owner_where_label(const lw_tv_node *where, char *out, size_t n);

/* The owner's sentence: a named owner (owner.name a string) as "kept by list
 * `kept` (local of train, train.py:12): 96 tensors, 3.00 MiB; keep .cpu()
 * of it ..." (or the graph's or the saved tensors' variant, after its
 * shape); else "owner not found: " with what holds its tensors without a
 * name (owner.unnamed_*), what was searched (search: the site's
 * owner_search) and why the search stopped. Returns out. */
char *lw_owner_text(const lw_tv_node *owner, const lw_tv_node *search, char *out, size_t n);

/* Sets site's where.label and its owner's and owners' text (the site's
 * owner_search for one not found), in t. */
void lw_torch_text_site(lw_tv *t, lw_tv_node *site);

/* The summary's label of the sites (each with its where.label and owner
 * text set): the first site's place (and its note), then on lines of their
 * own what keeps it alive (its owner's sentence) and the other leaking
 * sites of at least a tenth of its rate, two at most ("also leaking:
 * PLACE: +RATE/step; kept by ..."). The text after the first newline is
 * said under the exit line. NULL when no site; the caller frees. */
char *lw_torch_text_label(const lw_tv_node *sites);

/* Member key's string of n as one line (newlines as spaces) into out; 0
 * when absent or empty. */
int lw_torch_text_line(const lw_tv_node *n, const char *key, char *out, size_t size);

#endif
