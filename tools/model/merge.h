/* SPDX-License-Identifier: Apache-2.0 */
/* Several reports (one per rank of a job) read as one: the leaking places
 * grouped across reports, and the ranks named in a line. */
#ifndef LW_MERGE_H
#define LW_MERGE_H

#include "model.h"

#include <stddef.h>

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

/* The merged view's first line: "LEAK: ... (1 of 8 reports leak)", "LEAK in
 * 2 of 8 reports", "inconclusive: no leak called in 8 reports; undecided on
 * rank 0 (1 of 8)", or "no leak in any of 8 reports". Returns 1 when a report
 * leaks, 2 when none does but one is inconclusive, else 0. */
int lw_merge_headline(const lw_model *ms, size_t n, char *out, size_t len);

/* When some reports leak and others do not: the leaking rank that grows the
 * fastest against the others ("skew: rank 0 grows +512 B/step; the 7 others
 * that do not leak: median +0 B/step, highest +8 B/step"); returns 1, or 0
 * with out empty when all or none leak. One rank of eight growing is the
 * signal. */
int lw_merge_skew(const lw_model *ms, size_t n, char *out, size_t len);

#endif
