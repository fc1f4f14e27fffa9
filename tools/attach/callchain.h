/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch attach: the call chain of a stopped thread of another process,
 * walked with the call frame information (.eh_frame, found through
 * .eh_frame_hdr) of the modules mapped in it, read from its memory. Which
 * functions a thread is inside is told by its return addresses only: a
 * scan of every word of its stack also finds the stale ones that a large
 * frame (a buffer, a sanitizer's interceptor) keeps uninitialised from the
 * calls made before at that depth, and the dynamic linker's lazy binding
 * leaves them at every depth of every program. */
#ifndef LW_CALLCHAIN_H
#define LW_CALLCHAIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads n bytes of the target's memory at addr: 0, or -1. */
typedef int (*lw_callchain_read_fn)(void *ctx, uint64_t addr, void *buf, size_t n);

/* The registers, by DWARF number (inject_arch.h: LW_ARCH_DWARF_*). */
#define LW_CALLCHAIN_NREGS 17

typedef struct {
    uint64_t ra[256]; /* the return addresses, innermost first */
    int n;
    /* 1: the walk reached the outermost frame (its return address is
     * undefined, or 0). 0: it stopped at a frame it could not read (no
     * call frame information, a rule it does not follow, a frame out of the
     * stack): stop_sp is that frame's stack pointer, from where the words
     * of the stack tell no more than that they could be return addresses. */
    int complete;
    uint64_t stop_sp;
} lw_callchain;

/* Walks pid's thread from regs (pc: where it is stopped; sp_reg and ra_reg:
 * the DWARF numbers of the stack pointer and of the return address) within
 * the stack [stack_lo, stack_hi). */
void lw_callchain_walk(pid_t pid, lw_callchain_read_fn rd, void *ctx,
                       const uint64_t regs[LW_CALLCHAIN_NREGS], uint64_t pc, int sp_reg, int ra_reg,
                       uint64_t stack_lo, uint64_t stack_hi, lw_callchain *out);

#endif
