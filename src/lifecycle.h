/* SPDX-License-Identifier: Apache-2.0 */
/* Start-up, steps, exit. leakwatch starts lazily, at the first CUDA memory
 * call, so a process that never uses CUDA sees nothing of it. */
#ifndef LW_LIFECYCLE_H
#define LW_LIFECYCLE_H

#include <stdint.h>

/* Starts leakwatch if needed. 1: record this event; 0: pass through (disabled,
 * failed to start, or a forked child before its own start). */
int lw_started(void);

#endif
