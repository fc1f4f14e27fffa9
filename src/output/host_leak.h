/* SPDX-License-Identifier: Apache-2.0 */
/* The live blocks of a pinned host leak's site, for the PyTorch helper's
 * search for what keeps them (python/leakwatch/_torch.py, through
 * leakwatch_torch_host_blocks): the helper matches the storages of the
 * job's tensors against these address ranges. Off the hot path: two scans
 * of the live table, once per search. */
#ifndef LW_HOST_LEAK_H
#define LW_HOST_LEAK_H

#include <stdint.h>

/* The leaking site (a leak verdict of its own) that holds pinned host
 * memory, the fastest-growing first (the report's order), and its live
 * pinned host blocks: pairs[2k] its address, pairs[2k+1] its size, at most
 * max_pairs of them. Returns how many were written (0: the site holds none
 * now) and sets *site_id; -1 when no leaking site holds pinned host memory
 * (or no memory could be had). */
int lw_host_leak_blocks(unsigned long long *pairs, int max_pairs, uint32_t *site_id);

#endif
