/* SPDX-License-Identifier: Apache-2.0 */
/* The fork-handler registry: the locks of leakwatch that a fork takes, so
 * that the child never inherits one of them held by another thread, in one
 * table (fork_locks.c). (A few others are made new in the child instead: the
 * report writer's and the worker's, by the first row's child handler, and
 * src/hooks/bind.c's, by a handler of its own registered at load.) Before the fork the table is
 * walked forward, each row taking its lock; after it, in the parent and in
 * the child, backward, each row releasing it (or, in the child, making it
 * new). The table's order is the lock order: start_lock first, then the
 * tables' locks (each row takes its module's locks in that module's order),
 * then the attach layer's patch_lock (src/base/lock_order.h ranks start_lock
 * and patch_lock; src/attach/attach_locks.h says why patch_lock comes
 * after), then the walk lock of leakwatch's dl_iterate_phdr calls
 * (src/base/dl_walk.h), so a fork takes them as every other path does and
 * cannot deadlock against one.
 *
 * Adding a lock: one row in fork_locks.c's table, at its place in the lock
 * order. */
#ifndef LW_FORK_LOCKS_H
#define LW_FORK_LOCKS_H

/* One row: a lock, or one module's group of locks taken in its own order. */
typedef struct {
    void (*prepare)(void); /* before the fork: takes it */
    void (*parent)(void);  /* after, in the parent: releases it */
    void (*child)(void);   /* after, in the child: releases it or makes it new; NULL: parent */
} lw_fork_row;

/* Registers the handlers with pthread_atfork, once per process (later calls
 * do nothing): at leakwatch's start, or at an attach, whichever comes first
 * (both through lw_lifecycle_fork_handlers). first: the table's first row,
 * the lifecycle's start_lock, taken before every other lock of the table
 * and released after them; the same at every call (the first call's
 * counts). The registry thus calls no function of its callers' but through
 * the rows they hand it. */
void lw_fork_locks_register(const lw_fork_row *first);

/* The attach layer's row (above this one: src/attach/attach_locks.c), the
 * table's last: set once, before the attach takes any of its locks. A fork
 * that began before it was set leaves it out in the parent and the child
 * too. */
void lw_fork_locks_set_attach(const lw_fork_row *row);

#endif
