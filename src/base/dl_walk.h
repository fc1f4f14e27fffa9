/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch's walks of the loaded objects (dl_iterate_phdr), never across a
 * fork.
 *
 * glibc (2.36 at least) does not make its list lock (dl_load_write_lock,
 * held for the whole of a dl_iterate_phdr) new in a forked child: a child
 * forked while another thread walks waits forever at its first walk. A
 * child of a job under leakwatch walks where the job would not (its first
 * CUDA call binds its entries; its report names its frames), so leakwatch's
 * own walks must not be under way at a fork: each walk holds one lock, and
 * the fork handlers (src/process/fork_locks.c, the table's last row) take
 * it. A walk from a walk's callback on the same thread does not take it
 * again. The callbacks take no other lock of leakwatch's. */
#ifndef LW_DL_WALK_H
#define LW_DL_WALK_H

#include <link.h>

/* dl_iterate_phdr(cb, data), under the walk lock. */
int lw_dl_walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

/* Fork: takes the walk lock (waits for a walk under way); after the fork,
 * in the parent and in the child, gives it back. */
void lw_dl_walk_lock_for_fork(void);
void lw_dl_walk_unlock_after_fork(void);

#endif
