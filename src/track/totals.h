/* SPDX-License-Identifier: Apache-2.0 */
/* Process-wide counters: allocations, frees, failures, live and peak bytes,
 * overall, by kind of memory, by device and by both. */
#ifndef LW_TOTALS_H
#define LW_TOTALS_H

#include <stdatomic.h>
#include <stdint.h>

#include "memory_kind.h" /* lw_kind and its names (vocab) */

#define LW_MAX_DEVICES 63 /* devices 0..62 (one 64-bit mask with host); -1 = host or unknown */

/* A plain copy of a counter, for reading. */
typedef struct {
    uint64_t alloc_count, free_count, failed_count;
    int64_t live_bytes, live_count, peak_live_bytes;
} lw_counts;

void lw_totals_alloc(int device, lw_kind kind, uint64_t size);
void lw_totals_free(int device, lw_kind kind, uint64_t size);
void lw_totals_failed(int device, lw_kind kind);
void lw_totals_unknown_free(void);
void lw_totals_mapped(int64_t delta_bytes);

/* The lowest and highest live bytes of device memory (all devices, every
 * kind but pinned host memory) since the last call, which restarts both from
 * the current value. */
void lw_totals_take_floor_peak(int64_t *floor, int64_t *peak);
/* The same for pinned host memory (host RAM: its own series and verdict). */
void lw_totals_take_host_floor_peak(int64_t *floor, int64_t *peak);

/* In a forked child, at once (the lock of the shards' free list is free). */
void lw_totals_after_fork_child(void);

/* Every counter back to zero (a forked child's first start). */
void lw_totals_reset(void);

/* device -2 = all devices; kind LW_KIND_COUNT = all kinds. */
lw_counts lw_totals_get(int device, lw_kind kind);
uint64_t lw_totals_unknown_frees(void);
int64_t lw_totals_mapped_bytes(void);
/* Bit i+1 set when device i has been seen (bit 0: host/unknown). */
uint64_t lw_totals_devices_seen(void);

#endif
