/* The sampler: follows the floor of live memory from step to step, runs the
 * detector, and says so when a leak is established.
 *
 * Steps come from leakwatch_step() (marker), or, without marks, from a
 * thread that closes one interval every LEAKWATCH_INTERVAL_MS (time). The
 * hot path only updates the floor and peak counters (totals.c) and each
 * site's floor (record.c); everything else happens on the sampler's thread
 * or when a report is written. */
#ifndef LW_SAMPLER_H
#define LW_SAMPLER_H

#include "detector.h"

#include <stdint.h>

struct lw_site;

/* One per site that has held memory at a step's end: its own floor series. */
#define LW_SITE_BINS 64
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
} lw_site_track;

void lw_sampler_start(void);

/* The sampler's clock for stamping allocations: the step count once steps
 * are marked, else the number of time intervals closed. */
uint32_t lw_sampler_clock(void);
void lw_sampler_step(void);
/* Called on each recorded allocation: refreshes the device's free memory now
 * and then, from a thread that has a CUDA context. */
void lw_sampler_tick(void);
/* Takes in the steps not yet seen and evaluates once more (before a report). */
void lw_sampler_flush(void);

typedef struct {
    lw_verdict verdict; /* as announced: a leak needs LEAKWATCH_CONFIRM agreeing evaluations */
    lw_growth last;     /* the latest evaluation */
    const char *step_source;
    uint64_t steps;
    int64_t first_leak_step; /* step the current leak verdict was reached; -1: none */
    uint64_t withdrawn;      /* leak verdicts reached, then withdrawn (growth stopped) */
    uint64_t evaluations;
    int64_t device_free, device_total; /* -1: unknown */
    double interval_s;                 /* time mode: seconds per interval */
    uint32_t bin_width;
} lw_growth_state;

/* A consistent copy of the detector's state and, if bins is not NULL, of the
 * floor series (up to max bins; *nbins set). */
void lw_sampler_snapshot(lw_growth_state *st, lw_bin *bins, int max, int *nbins);

/* Runs fn for each tracked site under the sampler's lock. */
void lw_sampler_each_site(void (*fn)(struct lw_site *s, const lw_site_track *t, void *arg),
                          void *arg);

/* A forked child's first CUDA call: forget the parent's series and verdict. */
void lw_sampler_forget_parent(void);

/* Fork safety (lifecycle.c): no lock of ours held across fork. */
void lw_sampler_lock_for_fork(void);
void lw_sampler_unlock_after_fork(void);

#endif
