/* SPDX-License-Identifier: Apache-2.0 */
/* The order of the named locks of attach, detach, the lifecycle and the
 * fork handlers (written down in src/attach/attach_locks.h, "the locks of
 * attach and detach"), checked in debug builds: each thread keeps the ranks of the
 * named locks it holds, and taking one whose rank is not above every rank
 * held aborts with a message naming both (an inversion hung a job forking
 * during an attach for good: issue 32). Release in any order.
 *
 * The checks are compiled in where LW_DEBUG_LOCK_ORDER is defined (the
 * sanitizer builds: make SAN=1 or SAN=thread, or LW_DEBUG_LOCK_ORDER=1);
 * elsewhere LW_LOCK_RANKED is pthread_mutex_lock and nothing is recorded.
 * None of these locks is on the allocation path. */
#ifndef LW_LOCK_ORDER_H
#define LW_LOCK_ORDER_H

#include <pthread.h>

enum {
    LW_RANK_ATTACH = 1, /* attach_locks.c: attach_lock */
    LW_RANK_START = 2,  /* lifecycle.c: start_lock */
    LW_RANK_PATCH = 3,  /* attach_locks.c: patch_lock (a leaf) */
};

/* Before taking the lock of rank: aborts, after a message on stderr, when
 * this thread holds a named lock of the same or a higher rank. */
void lw_lock_order_take(int rank);
/* After releasing it (or, in a forked child, making it new). */
void lw_lock_order_drop(int rank);
/* The ranks this thread holds, one bit each (1 << rank): for tests. */
unsigned lw_lock_order_held(void);

#ifdef LW_DEBUG_LOCK_ORDER
#define LW_LOCK_RANKED(m, rank) (lw_lock_order_take(rank), (void)pthread_mutex_lock(m))
#define LW_UNLOCK_RANKED(m, rank) ((void)pthread_mutex_unlock(m), lw_lock_order_drop(rank))
#define LW_LOCK_FORGET(rank) lw_lock_order_drop(rank)
#else
#define LW_LOCK_RANKED(m, rank) ((void)pthread_mutex_lock(m))
#define LW_UNLOCK_RANKED(m, rank) ((void)pthread_mutex_unlock(m))
#define LW_LOCK_FORGET(rank) ((void)0)
#endif

#endif
