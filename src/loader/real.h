/* SPDX-License-Identifier: Apache-2.0 */
/* Finding the real functions behind the ones leakwatch interposes.
 *
 * leakwatch exports dlsym, so inside the library every lookup must go through
 * lw_real_dlsym: calling dlsym would come back into our own hook.
 *
 * The guarantee (README "How leakwatch reaches the real CUDA functions"):
 * every call a hook forwards reaches the function the caller would have
 * reached without leakwatch, and never a library that may have been
 * unloaded, because leakwatch keeps a reference on every object it keeps a
 * pointer into. */
#ifndef LW_REAL_H
#define LW_REAL_H

#include "real_dlsym.h"

#include <stdint.h>

/* Loaded into a running process (leakwatch attach), RTLD_LOCAL: from now on
 * "the next definition after ours" is the global scope's first. */
void lw_real_set_late(void);
int lw_real_is_late(void);

/* 1 when handle is dlopen(NULL)'s: the program's, whose lookups search the
 * global scope. */
int lw_is_main_handle(void *handle);

/* leakwatch's own exported symbol name (its public API), or NULL. */
void *lw_own_symbol(const char *name);

/* The function named name that a call from return address ra (a call of our
 * export of the same name) would have reached without leakwatch: the
 * dynamic linker binds a call to the first definition in the global scope
 * whose symbol version matches, else to one in the caller's own dependency
 * tree (a module opened RTLD_LOCAL). Resolved once per calling object and
 * function (index < LW_CALLER_FUNCS, one per exported name), cached, and the
 * calling object is kept loaded from then on. When the caller's scope has no
 * definition (the return address need not lie in the calling object: see
 * lw_real_guessed_calls), one loaded elsewhere is taken. NULL only when no
 * real definition exists anywhere in the process. */
#define LW_CALLER_FUNCS 24
void *lw_real_for_caller(const void *ra, int index, const char *name);

/* The same for a lookup that makes no call of the job's (dlsym's answer, a
 * version query of ours): not counted in lw_real_guessed_calls. */
void *lw_real_for_caller_nocount(const void *ra, int index, const char *name);

/* Per-object binding (hooks/bind.c): the caller slot of the object whose
 * mapped span holds addr, claimed on first use (0 <= slot <
 * LW_CALLER_OBJECTS); -1 when addr lies in no object or the table is full. */
#define LW_CALLER_OBJECTS 64
int lw_real_object_slot(const void *addr);

/* lw_real_for_caller for a call known to come from the object in slot k
 * (its own entry, bound in its global offset table): the same answer as for a
 * call from inside that object, whatever the return address. */
void *lw_real_for_object(int k, int index, const char *name);
void *lw_real_for_object_nocount(int k, int index, const char *name);

/* The calls whose target had to be guessed (tracker.guessed_target_calls):
 * a call that reached the export without a bound reference of its caller's
 * (hooks/bind.c), whose return address lay in code in no loaded object, or in
 * one whose scope defines no such function (libffi or generated code calling
 * the runtime function itself, a bare-name module's first call). Such a call goes to the
 * global scope's definition, else to the only object loaded that defines the
 * name, else to the first in load order; never to an error of leakwatch's own
 * while a definition exists. */
uint64_t lw_real_guessed_calls(void);

/* What dlsym(RTLD_DEFAULT, name) called from return address ra would return
 * without leakwatch, given that with it our export came first: the next
 * definition in the global scope, else one in the caller's own dependency
 * tree (glibc searches both). NULL when there is none. */
void *lw_default_for_caller(const void *ra, const char *name);

/* The driver: libcuda.so.1 as loaded in this process (by the runtime, or by
 * the program), referenced by leakwatch from the first call on so that it
 * stays loaded even when the runtime dlcloses it after a failed start.
 * NULL while no libcuda.so.1 is loaded. */
void *lw_driver_handle(void);

/* A driver function by exported name, for a call of our export of that name:
 * the next definition after leakwatch (another interposer, or libcuda.so.1
 * in the global scope), else libcuda.so.1's own. Kept loaded. */
void *lw_driver_next(void *_Atomic *slot, const char *name);

/* libcuda.so.1's own definition of name (never an interposer's, never ours);
 * NULL when the driver is not loaded or lacks it. */
void *lw_driver_symbol(const char *versioned_name);

/* Keeps the object that contains addr loaded for the rest of the process
 * (one reference, taken once per object). Returns 0, or -1 when addr lies in
 * no object that can be referenced (then nothing is kept). */
int lw_keep_loaded(const void *addr);

/* 1 when addr lies in libleakwatch.so itself: such pointers are never wrapped
 * again and such frames are dropped from call stacks. */
int lw_is_own_address(uintptr_t addr);

/* The exported name of leakwatch's own function at addr, or NULL. */
const char *lw_own_export_name(const void *addr);

#endif
