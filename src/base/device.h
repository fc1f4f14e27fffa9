/* Questions leakwatch asks the driver itself, directly (never through hooks). */
#ifndef LW_DEVICE_H
#define LW_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* The calling thread's current device, or -1 when it has no context. */
int lw_device_current(void);

/* Free and total memory of the current device; -1 when unknown. */
int lw_device_mem_info(size_t *free_bytes, size_t *total_bytes);

/* Refreshes the device's free and total memory now and then (at most once a
 * second, every 256th call on a thread), from a thread that has a CUDA
 * context: called on the allocation path and at step marks. */
void lw_device_tick(void);
/* The latest reading; -1 when unknown. */
void lw_device_last_mem(int64_t *free_bytes, int64_t *total_bytes);
/* A forked child forgets its parent's reading. */
void lw_device_forget(void);

#endif
