/* SPDX-License-Identifier: Apache-2.0 */
/* The rewritten entries: every loaded object's global offset table entries
 * through which it calls a function that has a hook (hook_names.h) are
 * pointed at the hook, and a detach writes each back as it was. Each call
 * takes patch_lock (attach_locks.h) itself. */
#ifndef LW_ATTACH_PATCH_H
#define LW_ATTACH_PATCH_H

#include <stddef.h>

/* Marks the hooks installed and rewrites every loaded object's entries: the
 * number of entries rewritten. */
size_t lw_patch_install(void);

/* Marks the hooks not installed and writes every entry back (one that the
 * dynamic linker has bound since, or whose object is gone, is left alone).
 * 0, or -1 when they were not installed. */
int lw_patch_uninstall(void);

/* 1 while the hooks are installed. */
int lw_patch_installed(void);

/* The objects loaded since the last look get their entries rewritten (the
 * worker calls it at each tick; the dlopen hook after each dlopen). */
void lw_patch_tick(void);

#endif
