/* SPDX-License-Identifier: Apache-2.0 */
/* Preloaded: each loaded object's references to the CUDA runtime functions
 * leakwatch wraps (its global offset table entries) are bound to entries of
 * that object's own (runtime.c's NAME__k), so that the real function is
 * chosen by the object that made the reference, whatever the call looks like:
 * a tail call (`jmp cudaMalloc@PLT`) leaves a return address in the module's
 * caller, which the export's lookup by return address would take for the
 * caller. Bound at the library's start, after every dlopen by path (a hook on
 * each object's dlopen entry) and, for objects loaded otherwise, at the next
 * call of an export. An entry that leads elsewhere than our export (an
 * interposer loaded before us) is left alone; so is everything when
 * leakwatch was loaded late (attach: src/attach/patch.c rewrites entries itself). */
#ifndef LW_HOOKS_BIND_H
#define LW_HOOKS_BIND_H

#include <stdatomic.h>

/* Binds the objects loaded since the last look, if any. Cheap when none
 * were; never waits for another thread's binding (that one does it). Every
 * call of an export makes one (a call reached by address): its common case,
 * "nothing loaded since", is inline below, so that the export sets up no
 * frame for it; the rest is lw_bind_poll_slow. */
void lw_bind_poll_slow(void);

/* bind.c's, read only by lw_bind_poll below: the words of ld.so's
 * _rtld_global that may be glibc's count of objects added (the true one is
 * always among them; bind.c says how they are found), how many (0: none
 * known, or not enabled: every poll takes the slow way), and the count when
 * last bound. With one candidate, lw_bind_cand[1] repeats lw_bind_cand[0]. */
#define LW_BIND_MAX_CAND 16
extern _Atomic(const unsigned long long *) lw_bind_cand[LW_BIND_MAX_CAND];
extern atomic_int lw_bind_ncand;
extern atomic_ullong lw_bind_seen_adds;

/* Nothing loaded since the last bind when every candidate still holds the
 * count of then: a load changes the true one. One or two candidates (glibc:
 * GL(dl_load_adds) and the main namespace's count of objects, equal until
 * an object is unloaded) are compared here, without a branch between them;
 * more, in lw_bind_poll_slow. */
static inline void lw_bind_poll(void) {
    int n = atomic_load_explicit(&lw_bind_ncand, memory_order_acquire);
    if (__builtin_expect((unsigned)n - 1u < 2u, 1)) {
        unsigned long long seen = atomic_load_explicit(&lw_bind_seen_adds, memory_order_acquire);
        const unsigned long long *a = atomic_load_explicit(&lw_bind_cand[0], memory_order_relaxed);
        const unsigned long long *b = atomic_load_explicit(&lw_bind_cand[1], memory_order_relaxed);
        if (((__atomic_load_n(a, __ATOMIC_ACQUIRE) ^ seen) |
             (__atomic_load_n(b, __ATOMIC_ACQUIRE) ^ seen)) == 0)
            return;
    }
    lw_bind_poll_slow();
}

/* What binding needs of the runtime's hooks: the index of a wrapped runtime
 * name (-1: not one), the name of index f (NULL past the last), and the
 * entry of object slot k for index f (NULL: none). runtime.c hands its own
 * in at the library's start, so that this file calls none of runtime.c's
 * functions (runtime.c -> bind.c, one way). */
typedef struct {
    int (*index)(const char *name);
    const char *(*name)(int f);
    void *(*entry)(int f, int k);
} lw_bind_runtime;

/* Called once, from a constructor (after the C library's constructors and
 * before the program's: every object loaded at start is relocated by then):
 * binds every loaded object when our exports are the ones the program
 * reaches (preloaded, not attached), and turns the look after loads on. */
void lw_bind_start(const lw_bind_runtime *rt);

#endif
