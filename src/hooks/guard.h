/* SPDX-License-Identifier: Apache-2.0 */
/* Which hook call is the user's. A runtime call (cudaMalloc) reaches the
 * driver (cuMemAlloc_v2) through hooks too; only the outermost one records,
 * so one user allocation is one record, whichever layer it entered by. */
#ifndef LW_GUARD_H
#define LW_GUARD_H

#include "hook_depth.h"

/* Returns 1 when this is the outermost hook on this thread. */
static inline int lw_hook_enter(void) {
    return lw_hook_depth++ == 0;
}
static inline void lw_hook_leave(void) {
    lw_hook_depth--;
}

#endif
