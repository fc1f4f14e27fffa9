/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's own counters: one series per device (growth_run.h lists
 * growth's files). Fed by the Python helper at each step mark
 * (lw_growth_torch_counters). The bytes held by live tensors grow by
 * exactly what a program keeps, even when the caching allocator never needs
 * a new segment; once a device has points this series decides the verdict
 * (lw_growth_torch_primary), and the device's floor is kept beside it.
 * Under lw_growth_lock. */
#ifndef LW_GROWTH_TORCH_H
#define LW_GROWTH_TORCH_H

#include "growth.h"
#include "tracked.h"

/* Takes the queued counters in (growth_queue.h), evaluating when due. */
void lw_growth_torch_drain(void);
/* Forgets every device's series. */
void lw_growth_torch_forget(void);
/* Evaluates once more each device whose series gained points. */
void lw_growth_torch_flush(void);
/* The end of the run: a release at the end, evaluated once more, the
 * final verdict. */
void lw_growth_torch_finish(void);

/* Once PyTorch's counters arrive they decide (st as lw_growth_get has it
 * so far): a leak on any device, no leak when every device says so,
 * otherwise inconclusive -- unless the device's floor has a confirmed leak
 * the tensors do not show. */
void lw_growth_torch_primary(lw_growth_state *st);

/* Device d's series; NULL: no point yet. */
const lw_tracked *lw_growth_torch_series(int d);
/* What PyTorch can still use on device d: the driver's free memory plus what
 * its cache holds that no tensor uses; -1: device d has no series or its
 * free memory is unknown. */
int64_t lw_growth_torch_available(int d);
/* Leak verdicts withdrawn, on every device. */
uint64_t lw_growth_torch_withdrawn(void);

#endif
