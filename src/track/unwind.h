/* SPDX-License-Identifier: Apache-2.0 */
/* The fast unwinder's slow half: what a frame's unwind rule is, read from
 * the DWARF call frame information (.eh_frame) of the object holding the
 * code. stack.c caches the rules per thread and walks the stack with them;
 * docs/stacks.md explains the design and why it is safe.
 *
 * A rule says how to get from a frame's registers to its caller's: where the
 * canonical frame address (CFA) is (the stack pointer or the frame pointer
 * plus a constant), and whether the frame pointer was saved (at the CFA plus
 * a constant). The return address is at a fixed place below the CFA
 * (unwind_arch.h). Frames whose rule is anything else (a DWARF expression,
 * another base register, a signal frame) get LW_UNW_FAIL, and the stack is
 * then unwound by the fallback unwinder. */
#ifndef LW_UNWIND_H
#define LW_UNWIND_H

#include "unwind_arch.h"

#include <stdint.h>

enum {
    LW_UNW_FAIL = 0, /* not expressible: use the fallback unwinder */
    LW_UNW_STEP = 1, /* an ordinary frame */
    LW_UNW_LAST = 2, /* the outermost frame (return address undefined) */
};
enum {
    LW_UNW_CFA_FP = 1,   /* CFA = fp + cfa_off (else sp + cfa_off) */
    LW_UNW_FP_SAVED = 2, /* the caller's fp is at CFA + fp_off */
};

typedef struct {
    int32_t cfa_off;
    int16_t fp_off;
    uint8_t flags;
    uint8_t kind;
} lw_unw_rule;

/* The rule of the frame whose return address (or, for the innermost frame,
 * whose instruction pointer just after a call) is ip. Off the hot path: a
 * binary search in the object's .eh_frame_hdr and a run of its CFA program
 * (about a microsecond). Takes no lock where glibc has _dl_find_object
 * (2.35+), else dl_iterate_phdr's. Never faults on a well-formed object;
 * LW_UNW_FAIL for anything it does not understand. */
lw_unw_rule lw_unw_rule_lookup(uintptr_t ip);

#endif
