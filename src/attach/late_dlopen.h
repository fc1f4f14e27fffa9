/* SPDX-License-Identifier: Apache-2.0 */
/* The hook of dlopen, handed out by an attach only: the objects a dlopen
 * loads get their entries rewritten too. */
#ifndef LW_ATTACH_LATE_DLOPEN_H
#define LW_ATTACH_LATE_DLOPEN_H

/* Finds the C library's dlopen, once. 0, or -1 (not found: no attach). */
int lw_late_dlopen_init(void);

/* dlopen's replacement: the real one, then (a path, while the hooks are
 * installed) the new objects' entries rewritten before it returns. */
void *lw_late_dlopen(const char *file, int mode);

#endif
