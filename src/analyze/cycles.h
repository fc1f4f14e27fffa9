/* SPDX-License-Identifier: Apache-2.0 */
/* Cycles: growth within each cycle that is released at its end (a list of
 * losses local to an epoch's function, a cache emptied every N steps). The
 * detector's cycle guard (detector.c) keeps such a sawtooth from being
 * called a leak; this says what it is: how long a cycle is, how fast memory
 * grows within one and how high it peaks above the floor.
 *
 * Fed with every raw point of a series (not the bins, which grow wider than
 * a cycle in a long run); constant memory, no I/O, a pure function of the
 * points (tested on known data).
 *
 * A cycle ends at a release: the floor falls, from one point to the next,
 * by more than six times the median step-to-step change of the last
 * LW_CYCLES_RECENT steps (the noise; a warm-up's jumps leave it soon) and,
 * in a cycle that began at a release, by at least half of what it rose
 * since. A cycle counts when it began at a release (the stretch from the
 * start of the run holds the warm-up) and its rise was gradual: at least 4
 * points, no single step giving more than half of the rise (one allocation
 * held for a phase and freed is a staircase, not growth within a cycle). */
#ifndef LW_CYCLES_H
#define LW_CYCLES_H

#include <stdint.h>

#define LW_CYCLES_RECENT 16

typedef struct {
    /* |step-to-step change| of the newest steps, releases left out. */
    double recent[LW_CYCLES_RECENT];
    uint32_t nrecent, recent_at;
    /* The cycle under way. */
    int open;
    int from_release;        /* it began at a release */
    double start_x, start_y; /* its first point (the low after a release) */
    double max_y, max_x;
    double prev_x, prev_y;
    double max_up; /* the largest single rise within it */
    uint32_t npoints;
    /* Completed cycles that count. */
    uint64_t count;
    double length_sum; /* steps from each one's opening release to its closing one */
    double last_release_x;
    double rise_sum, rise_dx_sum; /* bytes risen, and steps it took, over them all */
    double peak;                  /* the largest rise above a cycle's low */
    double floor;                 /* the lowest cycle low */
    double peak_x;                /* where that peak was */
} lw_cycles;

void lw_cycles_init(lw_cycles *c);
void lw_cycles_add(lw_cycles *c, double x, double y);

typedef struct {
    uint64_t count;       /* cycles from one release to the next, gradual growth between */
    double period;        /* their mean length, steps */
    double rise_per_step; /* mean growth within a cycle, bytes per step */
    double peak;          /* the highest it rose above a cycle's low, bytes */
    double floor;         /* the lowest low between cycles, bytes */
    double last_release;  /* step of the newest release */
} lw_cycles_summary;

/* Fills *s; returns 1 when at least two cycles were seen ("each cycle"). */
int lw_cycles_get(const lw_cycles *c, lw_cycles_summary *s);

#endif
