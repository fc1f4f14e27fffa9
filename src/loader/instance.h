/* SPDX-License-Identifier: Apache-2.0 */
/* One leakwatch per process, whatever the library's file name: every copy
 * exports the marker function leakwatch__instance (lifecycle.c), and the
 * copy loaded first (the earliest in the loader's list) is the one that
 * records. A second copy (renamed, or another installation's) stays inert
 * and refuses an attach, so that a job never gets two reports. */
#ifndef LW_INSTANCE_H
#define LW_INSTANCE_H

#include <stddef.h>

/* The marker every copy of the library exports. */
#define LW_INSTANCE_MARKER "leakwatch__instance"

/* 1 when another loaded object, loaded before this library, exports the
 * marker: its path (or "the program") is copied to path. 0 otherwise. */
int lw_instance_other(char *path, size_t n);

#endif
