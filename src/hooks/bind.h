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

/* runtime.c: the index of a wrapped runtime name (-1: not one), and the
 * entry of object slot k for index f (NULL: none). */
int lw_runtime_index(const char *name);
const char *lw_runtime_name(int f);
void *lw_runtime_entry(int f, int k);

#endif
