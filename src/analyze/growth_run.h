/* SPDX-License-Identifier: Apache-2.0 */
/* The growth sampler's shared state (growth.h): the lock that guards every
 * series and the verdict, and the run's mode and flags that every series
 * reads. The lowest of growth's files: each of the others may read it.
 *
 * growth's files, each one job, lowest first (the calls go one way):
 *   release_watch.c   a release at the end of a series (the rule, no state)
 *   growth_run.c      this state
 *   growth_queue.c    the step queue: marks from the job's threads, waiting
 *   growth_global.c   the device's floor (the CUDA allocations leakwatch
 *                     records itself): its series, a release at its end,
 *                     the sites its growth comes from
 *   growth_unmarked.c the phases without marks in a marked run
 *   growth_host.c     pinned host memory's series
 *   growth_torch.c    PyTorch's tensors, one series per device
 *   growth_signal.c   which series gives the run's verdict (lw_growth_get)
 *   growth.c          the sampler's entry points: takes the queue in,
 *                     routes each point, flushes and ends the run */
#ifndef LW_GROWTH_RUN_H
#define LW_GROWTH_RUN_H

#include <pthread.h>
#include <stdint.h>

/* Two locks: this one guards the series and the verdict; the queue's
 * (growth_queue.c) guards only the queue of steps, so a training thread
 * marking a step never waits for an evaluation. Order: this one, then the
 * queue's. */
extern pthread_mutex_t lw_growth_lock;

/* Under lw_growth_lock. */
typedef struct {
    int marker_mode;      /* steps are marks (leakwatch_step), not time intervals */
    uint64_t evaluations; /* of the global, tensor and unmarked series */
    int warning_due;      /* lw_growth_take_warning */
    int growing_due;      /* an announced leak not yet alarmed (lw_growth_take_growing) */
    int decided_at_exit;  /* the verdict was decided at the end, on all data */
    /* Set by lw_growth_finish: the final verdict is made; the worker's later
     * intervals (it runs until the process ends) and marks no longer change
     * it, so the report and the summary written after it agree. */
    int finished;
} lw_growth_run;
extern lw_growth_run lw_growth_r;

/* Seconds since the run's start, on the run's clock (runstate.h). */
double lw_growth_now_s(void);

#endif
