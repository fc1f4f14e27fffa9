/* SPDX-License-Identifier: Apache-2.0 */
/* Questions leakwatch asks the driver itself, directly (never through hooks).
 *
 * On the program's allocating threads leakwatch asks only for the calling
 * thread's current context (cuCtxGetCurrent: a read of the driver's
 * thread-local state, no side effect), and for that context's device once per
 * context (cuCtxGetDevice, on a context's first allocation); after an IPC
 * open, the size of the memory it mapped (cuMemGetAddressRange: a lookup in
 * the driver's own address table, no side effect). The free-memory
 * reading (cuMemGetInfo) is taken on the worker thread, inside the context
 * last seen allocating (pushed and popped there). */
#ifndef LW_DEVICE_H
#define LW_DEVICE_H

#include <stdint.h>

/* The calling thread's current device, or -1 when it has no context. Also
 * remembers the device for lw_device_sample. */
int lw_device_current(void);

/* The size of the allocation that contains device address ptr, as the
 * driver knows it; 0 when it cannot say. */
uint64_t lw_device_range_size(uint64_t ptr);

/* Refreshes the reading of the device's free and total memory, at most once
 * a second, for the device last seen allocating: called by the worker thread
 * only. */
void lw_device_sample(void);
/* The same at once, on the calling thread (an out-of-memory: the figure
 * must be that moment's), whatever the last reading's age. */
void lw_device_sample_now(void);
/* 1 once a reading was taken. */
int lw_device_have_reading(void);
/* The latest reading; -1 when unknown. */
void lw_device_last_mem(int64_t *free_bytes, int64_t *total_bytes);
/* A reading taken by someone else at a moment that matters (PyTorch's
 * out-of-memory observer): it replaces the latest; negative values are
 * ignored. */
void lw_device_note_mem(int64_t free_bytes, int64_t total_bytes);
/* A forked child forgets its parent's reading and contexts. */
void lw_device_forget(void);

#endif
