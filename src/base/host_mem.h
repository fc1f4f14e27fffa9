/* SPDX-License-Identifier: Apache-2.0 */
/* The host's memory, as the kernel states it (/proc/meminfo): what a leak of
 * pinned host memory (page-locked RAM) runs out of. Read at report time,
 * never on the allocation path. */
#ifndef LW_HOST_MEM_H
#define LW_HOST_MEM_H

#include <stdint.h>

/* MemAvailable and MemTotal in bytes; -1 each when unknown. Returns 1 when
 * both are known. */
int lw_host_mem(int64_t *available, int64_t *total);

#endif
