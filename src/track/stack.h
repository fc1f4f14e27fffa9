/* SPDX-License-Identifier: Apache-2.0 */
/* Native call stacks: return addresses only, innermost first, leakwatch's own
 * frames left out. Names are found at report time (symbolize.c), never here.
 *
 * Two unwinders (docs/stacks.md):
 * - the fast walker (x86-64): follows each frame's DWARF unwind rule, cached
 *   per thread, reading only the return-address and saved-frame-pointer
 *   slots, every read checked against the thread's stack bounds. Each thread
 *   also keeps its recent stacks with their rules: a stack seen before is
 *   confirmed with one load and one compare per frame, and then comes with
 *   the caller's tag (record.c keeps the stack's site there) so that it need
 *   not be hashed or looked up.
 * - the fallback: libunwind's unw_backtrace (libunwind.so.8, opened at run
 *   time), or libgcc_s's _Unwind_Backtrace where libunwind is missing, for
 *   frames the walker does not follow (signal frames, DWARF expressions,
 *   stacks it cannot bound such as coroutine stacks) and on other
 *   architectures.
 * LEAKWATCH_VERIFY_STACKS=1 unwinds every stack with both and counts the
 * differences. */
#ifndef LW_STACK_H
#define LW_STACK_H

#include "pyframes.h"

#include <stddef.h>
#include <stdint.h>

#define LW_STACK_MAX 256

typedef struct {
    int n;          /* frames written */
    uint8_t cut;    /* stopped at the first frame inside [cut_lo, cut_hi) */
    uint8_t known;  /* the same stack as last time: *tag is what the caller left */
    void **tag;     /* the caller's slot for this stack (NULL: none) */
    uint64_t aux;   /* known: the word stored with *tag */
    void *internal; /* for lw_stack_done */
    /* known: the frames are in the thread's cache here, not yet in ips (the
     * caller that finds its site by the tag needs no copy); lw_stack_ips
     * copies them. NULL: ips holds them. */
    const uintptr_t *cached;
} lw_stack_info;

/* Puts the frames of a capture into ips (where lw_stack_capture was told to
 * write them), if they are still only in the thread's cache. Before
 * lw_stack_done. */
static inline void lw_stack_ips(lw_stack_info *info, uintptr_t *ips) {
    if (info->cached) {
        __builtin_memcpy(ips, info->cached, (size_t)info->n * sizeof *ips);
        info->cached = 0;
    }
}

/* Fills ips with up to max return addresses (or leaves them in the cache:
 * see cached above). When cut_hi > cut_lo, the walk
 * stops after the first frame whose address is in [cut_lo, cut_hi) (the
 * Python interpreter's evaluation function: the Python frames tell what is
 * below it). Every lw_stack_capture is followed, on the same thread, by
 * lw_stack_done, which stores tag and aux in the slot (when there is one). */
void lw_stack_capture(uintptr_t *ips, int max, uintptr_t cut_lo, uintptr_t cut_hi,
                      lw_stack_info *out);
void lw_stack_done(lw_stack_info *info, void *tag, uint64_t aux);

/* The calling thread's Python frame cache (pyframes.h), kept with its stack
 * caches; NULL when there is none (no fast walker, no memory, or a signal
 * handler interrupting a capture). */
lw_py_cache *lw_stack_py_cache(int max);

/* Opens the fallback unwinder. Called when leakwatch starts (first CUDA
 * event); idempotent. */
void lw_stack_init(void);

/* A forked child: the forking thread's cached stacks name the parent's
 * sites, which the child forgets. */
void lw_stack_after_fork_child(void);

/* LEAKWATCH_VERIFY_STACKS: whether it is on (read inline: every allocation
 * asks; set once, when the stacks start, before any capture), and a
 * difference found by the caller (a known stack whose tag is another
 * stack's site). */
extern int lw_stack_verify;
static inline int lw_stack_verifying(void) {
    return lw_stack_verify;
}
void lw_stack_count_mismatch(void);

/* For the report. */
typedef struct {
    const char *unwinder; /* "x86-64 CFI walker, fallback libunwind.so.8", ... */
    uint64_t fallback;    /* stacks unwound by the fallback unwinder */
    uint64_t verified;    /* LEAKWATCH_VERIFY_STACKS: stacks unwound twice */
    uint64_t mismatches;  /* ... whose two unwinds differed */
} lw_stack_stats;
void lw_stack_get_stats(lw_stack_stats *out);
void lw_stack_forget_stats(void);

#endif
