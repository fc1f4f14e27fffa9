/* SPDX-License-Identifier: Apache-2.0 */
/* The process's code epoch: it changes whenever code may have gone away
 * (dlclose), so that caches keyed by code address (the stack walker's unwind
 * rules, track/stack.c) know that other code may now sit at an address. */
#ifndef LW_CODE_EPOCH_H
#define LW_CODE_EPOCH_H

#include <stdatomic.h>

extern _Atomic unsigned lw_code_epoch_value;

static inline unsigned lw_code_epoch(void) {
    return atomic_load_explicit(&lw_code_epoch_value, memory_order_acquire);
}

#endif
