/* SPDX-License-Identifier: Apache-2.0 */
/* uthash, configured so that running out of memory is survivable: the add is
 * dropped and lw_uthash_oom is set, instead of uthash's default exit(-1). */
#ifndef LW_UTHASH_H
#define LW_UTHASH_H

#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (lw_uthash_oom = 1)
extern _Thread_local int lw_uthash_oom;
/* Bucket arrays come from the tracker's allocator (tracker_mem.h), so that
 * they fail the way the records do, and tests can make them fail. */
#include "tracker_mem.h"
#include <stdlib.h>
#define uthash_malloc(sz) lw_tracker_malloc(sz)
#define uthash_free(ptr, sz) free(ptr)
#include <uthash.h>

#endif
