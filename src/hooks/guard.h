/* SPDX-License-Identifier: Apache-2.0 */
/* Which hook call is the user's. A runtime call (cudaMalloc) reaches the
 * driver (cuMemAlloc_v2) through hooks too; only the outermost one records,
 * so one user allocation is one record, whichever layer it entered by.
 *
 *     lw_event_gate gate = lw_hook_enter();
 *     CUresult r = real(...);
 *     lw_event_...(gate, r, ...);   (track/events.h)
 *     lw_hook_leave();
 */
#ifndef LW_GUARD_H
#define LW_GUARD_H

#include "events.h"
#include "hook_depth.h"
#include "lifecycle.h"

/* The outermost hook on this thread gets the start check to hand to its
 * event (events.h); a nested one gets NULL. */
static inline lw_event_gate lw_hook_enter(void) {
    return lw_hook_depth++ == 0 ? lw_started : (lw_event_gate)0;
}
static inline void lw_hook_leave(void) {
    lw_hook_depth--;
}

#endif
