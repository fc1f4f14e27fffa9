/* Questions leakwatch asks the driver itself, directly (never through hooks). */
#ifndef LW_DEVICE_H
#define LW_DEVICE_H

#include <stddef.h>

/* The calling thread's current device, or -1 when it has no context. */
int lw_device_current(void);

/* Free and total memory of the current device; -1 when unknown. */
int lw_device_mem_info(size_t *free_bytes, size_t *total_bytes);

#endif
