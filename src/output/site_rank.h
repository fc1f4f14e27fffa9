/* SPDX-License-Identifier: Apache-2.0 */
/* The order of the call sites: leaking sites first, fastest growth first;
 * then by live bytes, bytes allocated, site id. The report writes them in
 * this order, and every output that names one site takes the first
 * (lw_site_lead_ranked, from the list the report writes), so that all of
 * them agree, ties included. */
#ifndef LW_SITE_RANK_H
#define LW_SITE_RANK_H

#include "growth.h"
#include "sites.h"

#include <stddef.h>
#include <stdint.h>

/* What the sampler concluded about one leaking site, copied under its lock:
 * its thread updates the tracks while a report is written from another. */
typedef struct {
    const lw_site *site;
    lw_growth growth;
    int nbins;
    lw_bin bins[LW_SITE_BINS + 1];
} lw_site_view;

/* Those of every leaking site, by site address. */
typedef struct {
    lw_site_view *v;
    size_t n, cap;
} lw_site_views;

/* Only a process whose verdict is a leak (global_leak) has leaking sites:
 * otherwise none is loaded. */
void lw_site_views_load(lw_site_views *vs, int global_leak);
/* The view of site s; NULL: s has no leak verdict. */
const lw_site_view *lw_site_view_of(const lw_site_views *vs, const lw_site *s);
void lw_site_views_free(lw_site_views *vs);

/* One site as ranked: its counters read once, so that the order and what
 * the report writes of it agree. */
typedef struct {
    lw_site *site;
    int64_t live_bytes;
    uint64_t alloc_bytes;
    int leak;
    double slope;
    lw_site_counts counts; /* all its counters, as read for the order: what the
                              report writes of it and what the answer says of it */
} lw_ranked_site;

/* Every site (and the pooled one, when it was used), most relevant first:
 * the order the report writes them in. *np is their count; NULL when out of
 * memory. The caller frees it. */
lw_ranked_site *lw_sites_ranked(const lw_site_views *vs, size_t *np);

/* How many of those the report writes at most (LEAKWATCH_REPORT_SITES, after
 * PyTorch's own sites). */
size_t lw_sites_shown(void);

/* The site the answer names first: the first of a list lw_sites_ranked gave
 * (the report's first site), as ranked. 1: it leaks (*rate: its rate); 0:
 * it holds the most live bytes; -1: none (no site, or the first holds
 * nothing). */
int lw_site_lead_ranked(const lw_ranked_site *all, size_t n, const lw_site **site, double *rate);
/* The entry of site s in that list, or NULL. */
const lw_ranked_site *lw_ranked_find(const lw_ranked_site *all, size_t n, const lw_site *s);

#endif
