/* SPDX-License-Identifier: Apache-2.0 */
/* Start-up, steps, exit. leakwatch starts lazily, at the first CUDA memory
 * call, so a process that never uses CUDA sees nothing of it. */
#ifndef LW_LIFECYCLE_H
#define LW_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

/* Starts leakwatch if needed. 1: record this event; 0: pass through (disabled,
 * failed to start, or a forked child before its own start). */
int lw_started(void);

/* leakwatch attach (src/attach/attach.c), once the hooks are in place: starts
 * recording now. 0: recording; 1: it already was; -1: disabled or failed. */
int lw_lifecycle_attach(void);

/* Detach: ends the worker, writes the final report (its path into path) and
 * passes every call through from then on. 0, or -1 (not attached, or the
 * report could not be written). */
int lw_lifecycle_detach(char *path, size_t n);

/* The fork-handler registry's first row (fork_locks.c): start_lock taken
 * before a fork, released after it; in the child, released, then the child's
 * own state set (its steps; it reports only if it uses CUDA itself). */
void lw_lifecycle_lock_for_fork(void);
void lw_lifecycle_unlock_after_fork(void);
void lw_lifecycle_after_fork_child(void);

#endif
