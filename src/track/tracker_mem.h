/* SPDX-License-Identifier: Apache-2.0 */
/* Memory for the tracker's own tables (live records, their hash buckets,
 * call sites). One place, so that running out of it is handled the same way
 * everywhere (the allocation goes untracked or is pooled, and is counted),
 * and so that tests can make it run out on purpose.
 *
 * Test hook: LEAKWATCH_TEST_FAIL_ALLOC=N lets the first N of these
 * allocations succeed and fails every later one. It is read once, when
 * leakwatch starts, is ignored in set-user-ID programs (secure_getenv), and
 * changes nothing but leakwatch's own bookkeeping. */
#ifndef LW_TRACKER_MEM_H
#define LW_TRACKER_MEM_H

#include <stddef.h>

/* Reads LEAKWATCH_TEST_FAIL_ALLOC (a bad value: one line, hook off). */
void lw_tracker_mem_init(void);

void *lw_tracker_malloc(size_t n);
void *lw_tracker_calloc(size_t count, size_t size);

#endif
