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

/* Binds the objects loaded since the last look, if any. Cheap when none
 * were; never waits for another thread's binding (that one does it). */
void lw_bind_poll(void);

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
