/* SPDX-License-Identifier: Apache-2.0 */
/* Why the device filled up (issue 40): the anatomy of device memory by role
 * and the post-mortem at out-of-memory.
 *
 * The anatomy: per device, at the report's moment and at the run's peak,
 * weights, gradients, optimizer_state (from PyTorch's helper, which finds
 * the optimizers and modules alive and counts each storage once, on a
 * sparse schedule: python/leakwatch/_anatomy.py), activations (live tensor
 * memory outside the other roles), cached_free (reserved minus allocated),
 * outside_pytorch (device memory used but not reserved by PyTorch: other
 * libraries, the CUDA context) and leak (what the leak holds: the floor's
 * growth since its onset). Without PyTorch: by call site only (the leaking
 * sites' bytes, the rest), and the report says so.
 *
 * The post-mortem: when an allocation fails for want of memory (PyTorch's
 * out-of-memory observer; without PyTorch, a device allocation failing with
 * the runtime's or driver's out-of-memory error), the facts of that moment,
 * the cause (model_and_optimizer, activations, leak, fragmentation,
 * outside_pytorch), the evidence and the remedy, written in the report's
 * "oom" object; every answer line then leads with it. */
#ifndef LW_ANATOMY_H
#define LW_ANATOMY_H

#include "json_write.h"

#include <stddef.h>
#include <stdint.h>

/* The helper's values, in this order (leakwatch_torch_anatomy). */
enum {
    LW_AN_WEIGHTS,
    LW_AN_GRADIENTS,
    LW_AN_OPTIMIZER_STATE,
    LW_AN_ALLOCATED,
    LW_AN_RESERVED,
    LW_AN_PEAK_ALLOCATED,
    LW_AN_PEAK_RESERVED,
    LW_AN_FREE,
    LW_AN_TOTAL,
    LW_AN_REQUEST,
    LW_AN_COUNT
};
enum { LW_AN_SAMPLE = 0, LW_AN_OOM = 1, LW_AN_OBSERVING = 2 };

/* A sample from the helper (event LW_AN_SAMPLE), an out-of-memory on that
 * device (LW_AN_OOM: the sample of that moment, with the request), or the
 * helper's observer attached (LW_AN_OBSERVING: PyTorch's allocator failures
 * are then told by it, not taken from failed driver calls). Returns 1 when
 * a post-mortem report is due now. */
int lw_anatomy_torch(int device, int event, const long long *values, int n);

/* A device allocation failed with result (the runtime's and the driver's
 * out-of-memory error is 2): returns 1 when a post-mortem report is due now
 * (an out-of-memory, not told by PyTorch's observer, at most one report a
 * second). */
int lw_anatomy_alloc_failed(int kind, uint64_t size, int device, int result);

/* 1 once an out-of-memory was seen: no output then forecasts one. */
int lw_anatomy_had_oom(void);

/* The latest out-of-memory's cause, evidence and remedy (copied); 0 when
 * none was seen. */
int lw_anatomy_oom_get(char *cause, size_t cn, char *evidence, size_t en, char *remedy, size_t rn);

/* The report's "anatomy" and "oom" objects (oom: null when none). */
void lw_anatomy_emit(lw_jw *w);

/* Fork safety (fork_locks.c): no lock of ours held across fork. */
void lw_anatomy_lock_for_fork(void);
void lw_anatomy_unlock_after_fork(void);

/* A forked child's start: the parent's samples and out-of-memory are not its. */
void lw_anatomy_forget(void);

#endif
