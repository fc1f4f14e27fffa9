/* SPDX-License-Identifier: Apache-2.0 */
/* What preloading would interpose, by name: exactly the functions the library
 * exports (read from its own dynamic symbol table: one list, whatever the hook
 * layer adds; the public leakwatch_* API left out), and dlopen, whose hook
 * only an attach hands out (late_dlopen.h). */
#ifndef LW_ATTACH_HOOK_NAMES_H
#define LW_ATTACH_HOOK_NAMES_H

/* Reads the list, once (the first attach; under the attach lock), and adds
 * the one hook only an attach hands out: late_name's, late_hook (dlopen's,
 * late_dlopen.h; passed in, so that this file calls no other of the attach
 * layer, which reads its list). 0, or -1 (the library's own symbol table
 * could not be read). */
int lw_hook_names_build(const char *late_name, void *late_hook);

/* 1 once the list is built. */
int lw_hook_names_built(void);

/* The hook that replaces the function name, or NULL when there is none. */
void *lw_hook_for(const char *name);

#endif
