/* SPDX-License-Identifier: Apache-2.0 */
/* The locks of attach and detach, in one order, and what a fork does to
 * them:
 *
 *   attach_lock  (one attach or detach at a time: attach.c)
 *     -> start_lock  (src/process/lifecycle.c: lw_lifecycle_attach/detach, and the
 *                     fork handlers' first lock)
 *       -> patch_lock  (the rewritten entries: patch.c; a leaf: nothing is
 *                       taken while it is held)
 *
 * A fork takes start_lock, then patch_lock (the fork-handler registry,
 * src/process/fork_locks.c, walks its table in the lock order). So attach and detach
 * never hold patch_lock while they take start_lock (that inversion hung a job
 * forking during an attach for good), and attach_lock, which no fork handler
 * takes, is made new in a child (the attach or detach that held it runs in
 * the parent only).
 *
 * Debug builds check this order at every take (src/base/lock_order.h:
 * LW_LOCK_RANKED, an abort naming both locks). */
#ifndef LW_ATTACH_LOCKS_H
#define LW_ATTACH_LOCKS_H

void lw_attach_lock(void);
void lw_attach_unlock(void);
void lw_patch_lock(void);
void lw_patch_unlock(void);

/* Puts these locks' row into the fork-handler registry and registers its
 * handlers (once per process; before the first lw_lifecycle_attach). */
void lw_attach_locks_for_fork(void);

#endif
