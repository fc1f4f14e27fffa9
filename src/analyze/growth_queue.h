/* SPDX-License-Identifier: Apache-2.0 */
/* The step queue (growth.h: lw_growth_step, lw_growth_wait): the points the
 * job's threads queue at each step mark, and PyTorch's counters the helper
 * reads (lw_growth_torch_counters), until the worker takes them in under
 * lw_growth_lock (growth.c, growth_torch.c). Its own lock, taken after
 * lw_growth_lock, guards only the queue: a thread marking a step never waits
 * for an evaluation. */
#ifndef LW_GROWTH_QUEUE_H
#define LW_GROWTH_QUEUE_H

#include <stdint.h>

/* One step (or interval): the floor and peak of the CUDA memory leakwatch
 * records, and of pinned host memory. */
typedef struct {
    double x, t;
    int64_t floor, peak;
    int64_t host_floor, host_peak; /* pinned host memory */
} lw_growth_point;

/* PyTorch's counters on one device at a step mark (or interval). */
typedef struct {
    int device;
    double x, t;
    int64_t allocated, reserved, device_free;
} lw_torch_point;

#define LW_GROWTH_RING 4096
#define LW_TORCH_RING 1024

/* Moves the queued steps into out (LW_GROWTH_RING at most) and returns how
 * many; *marked: a step was marked (the run counts marks from now on). */
int lw_growth_queue_take(lw_growth_point *out, int *marked);
/* Moves the queued counters into out (LW_TORCH_RING at most). */
int lw_growth_queue_take_torch(lw_torch_point *out);
/* Queues pt, its x the run's clock now (lw_run_clock): a full queue's
 * newest point is replaced. */
void lw_growth_queue_torch(lw_torch_point pt);

/* Empties the queue and forgets the marks (a fresh series). */
void lw_growth_queue_reset(void);
/* Makes the worker's condition variable, once per process (lw_growth_init,
 * after lw_growth_lock is released). */
void lw_growth_queue_init_wake(void);

/* Fork safety: the queue's lock (after lw_growth_lock). */
void lw_growth_queue_lock(void);
void lw_growth_queue_unlock(void);

#endif
