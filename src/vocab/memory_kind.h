/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of memory the report counts apart ("totals.by_kind",
 * "failed_allocations[].kind", "answer.kind"): the only place they are
 * named. The library counts by them (totals.h); the command reads them back. */
#ifndef LW_MEMORY_KIND_H
#define LW_MEMORY_KIND_H

typedef enum {
    LW_KIND_DEVICE,      /* cudaMalloc, cuMemAlloc, async and pool allocations */
    LW_KIND_MANAGED,     /* cudaMallocManaged, cuMemAllocManaged */
    LW_KIND_PINNED_HOST, /* cudaMallocHost, cudaHostAlloc, cuMemHostAlloc, cuMemAllocHost */
    LW_KIND_PHYSICAL,    /* cuMemCreate: physical memory behind virtual mappings */
    LW_KIND_COUNT
} lw_kind;

/* "device", "managed", "pinned_host", "physical"; "unknown" for any other
 * value. */
const char *lw_kind_name(lw_kind k);
/* The kind named s, or -1 when s is NULL or names none. */
int lw_kind_parse(const char *s);

#endif
