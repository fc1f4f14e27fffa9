/* SPDX-License-Identifier: Apache-2.0 */
/* Attribution: which call sites the growth comes from.
 *
 * Each site that has held memory at a step's end gets its own floor series
 * (lw_site_track, at most 4096 sites). A site is judged by what it keeps:
 * each live allocation carries the step it was made at, so the bytes a site
 * still holds from allocations made since the growth began, divided by the
 * steps since, is what the site keeps per step: exactly the leak rate for a
 * leaking site, about nothing for one whose allocations are freed within
 * the step, nothing for a cache filled before the growth. A site leaks when
 * it keeps at least a tenth of the global growth, from at least 3
 * allocations (in a marked series spread over at least a third of that
 * span: not one burst).
 *
 * Called by growth.c under its lock; no thread, no I/O. */
#ifndef LW_ATTRIBUTION_H
#define LW_ATTRIBUTION_H

#include "detector.h"
#include "series.h"

#include <stdint.h>

/* One per site that has held memory at a step's end: its own floor series. */
#define LW_SITE_BINS 64
#define LW_SITE_BEFORE 32
typedef struct lw_site_track {
    lw_series series;
    lw_bin bins[LW_SITE_BINS];
    lw_growth growth; /* slope: bytes retained per step since the onset */
    int evaluated;
    /* Live allocations made since the onset of growth (a scan of the live
     * table): what this site keeps, step after step. */
    uint64_t kept_bytes;
    uint32_t kept_count;
    uint32_t kept_first_step, kept_last_step;
    /* Its live allocations made before the onset, by step in LW_SITE_BEFORE
     * buckets of equal width over [0, onset): where, walking back from the
     * onset at the site's own cadence, its growth demonstrably began. */
    uint32_t before_min[LW_SITE_BEFORE], before_max[LW_SITE_BEFORE], before_n[LW_SITE_BEFORE];
} lw_site_track;

/* A point for every site: its floor since the last point (x: the run
 * clock's step or interval; t: seconds since the start). */
void lw_attribution_point(double x, double t);

/* The marked (or time) series' growth g: judges every site on what it keeps
 * from allocations made since g's onset, up to now. Returns the step (from
 * 1) where a leaking site's growth demonstrably began (from its first
 * allocation since the onset, back over its older live allocations for as
 * long as they follow at the site's own cadence); NAN: no leaking site. */
double lw_attribution_judge(const lw_growth *g);

/* The phases without marks: judges every site on what it keeps from
 * allocations made at or after step `since`, over `span` intervals of
 * growth at `slope` bytes per interval (no spread asked: every allocation
 * in such a phase carries the same step). */
void lw_attribution_judge_phases(uint32_t since, double span, double slope);

/* Forgets every site's series (the sites and their judgements stay). */
void lw_attribution_forget(void);

/* A forked child: sites.c forgot the parent's sites and their tracks. */
void lw_attribution_forget_parent(void);

#endif
