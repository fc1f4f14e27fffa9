/* SPDX-License-Identifier: Apache-2.0 */
/* Pinned host memory's series (growth_run.h lists growth's files): host RAM,
 * so never part of the device's floor; its own series and verdict (same
 * rules), evaluated once it has held any, and the run's leak when the
 * device gives none. Under lw_growth_lock. */
#ifndef LW_GROWTH_HOST_H
#define LW_GROWTH_HOST_H

#include "growth.h"
#include "growth_queue.h"

/* An empty series (lw_growth_init). */
void lw_growth_host_init(void);
/* Forgets the series, its sites' onset and the helper's cue. */
void lw_growth_host_forget(void);

/* pt's pinned host floor and peak into the series. Returns 1 when the
 * series was evaluated (the caller then judges its sites, once the device's
 * point is in too: lw_growth_host_judge_sites). */
int lw_growth_host_add(const lw_growth_point *pt);
/* The sites a pinned host leak comes from, when it alone grows: neither the
 * device's floor nor the phases without marks do (their own judgements of
 * the sites stand then). */
void lw_growth_host_judge_sites(void);
/* Evaluates once more if points came (lw_growth_flush), and judges the
 * sites. */
void lw_growth_host_flush(void);
/* The end of the run: evaluated once more, the final verdict, the sites. */
void lw_growth_host_finish(void);

/* Its sites are judged (a leaking site found): the PyTorch helper's cue to
 * look for what keeps them (lw_growth_torch_counters' bit 1). Read without
 * the lock. */
int lw_growth_host_cue(void);

/* One verdict over every kind of memory the job can run out of: a leak of
 * pinned host memory is the run's leak when the device's memory gives none
 * (st as lw_growth_get has it so far). Returns the series shown then, NULL
 * when it gave no verdict. */
const lw_series *lw_growth_host_primary(lw_growth_state *st);

#endif
